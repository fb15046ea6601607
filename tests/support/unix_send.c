/* Sends standard input to a unix stream socket, for images without a unix-socket client
 * (busybox's nc has none): `unix_send PATH < data`. Writes everything, half-closes, then waits
 * for the server to close its end (the ags record server does once it has recorded every line)
 * and prints `SENT <bytes>`. Exit 3 when it cannot connect (errno printed).
 * Built statically by tests/live/agent_log.rs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) { fputs("usage: unix_send PATH\n", stderr); return 2; }
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    strncpy(addr.sun_path, argv[1], sizeof addr.sun_path - 1);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        printf("CONNECT-FAILED %s\n", strerror(errno));
        return 3;
    }
    char buf[65536];
    long total = 0;
    ssize_t n;
    while ((n = read(0, buf, sizeof buf)) > 0) {
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(fd, buf + off, (size_t)(n - off));
            if (w <= 0) { printf("WRITE-FAILED %s\n", strerror(errno)); return 4; }
            off += w;
            total += w;
        }
    }
    shutdown(fd, SHUT_WR);
    while (read(fd, buf, sizeof buf) > 0) {}
    printf("SENT %ld\n", total);
    return 0;
}
