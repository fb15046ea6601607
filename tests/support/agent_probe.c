/* A minimal ssh-agent client for images without ssh (busybox): connects to $SSH_AUTH_SOCK,
 * asks for the identities (SSH_AGENTC_REQUEST_IDENTITIES) and prints `IDENTITIES <n>`.
 * Built statically by tests/daily_git.rs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int read_full(int fd, unsigned char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

int main(void) {
    const char *path = getenv("SSH_AUTH_SOCK");
    if (!path) { puts("NO-SSH_AUTH_SOCK"); return 2; }
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) { perror("connect"); return 3; }
    const unsigned char request[5] = { 0, 0, 0, 1, 11 };
    if (write(fd, request, sizeof request) != sizeof request) { perror("write"); return 4; }
    unsigned char head[9];
    if (read_full(fd, head, sizeof head) != 0 || head[4] != 12) { puts("BAD-REPLY"); return 5; }
    unsigned n = (unsigned)head[5] << 24 | head[6] << 16 | head[7] << 8 | head[8];
    printf("IDENTITIES %u\n", n);
    return 0;
}
