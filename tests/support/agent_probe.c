/* A minimal ssh-agent client for images without ssh (busybox): connects to $SSH_AUTH_SOCK,
 * asks for the identities (SSH_AGENTC_REQUEST_IDENTITIES) and prints `IDENTITIES <n>`.
 * `agent_probe send HEX...` instead sends each HEX (a message: type byte and payload) as one
 * framed message on one connection and prints `REPLY <type>` for each answer (`REPLY closed`
 * when the connection ends). Built statically by tests/live/daily_git.rs. */
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

static int send_hex(int fd, const char *hex) {
    size_t n = strlen(hex) / 2;
    unsigned char *msg = malloc(n + 4);
    if (!msg) return -1;
    msg[0] = n >> 24; msg[1] = n >> 16; msg[2] = n >> 8; msg[3] = n;
    for (size_t i = 0; i < n; i++) sscanf(hex + 2 * i, "%2hhx", &msg[4 + i]);
    int ok = write(fd, msg, n + 4) == (ssize_t)(n + 4) ? 0 : -1;
    free(msg);
    return ok;
}

static int send_all(int fd, int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        unsigned char head[5];
        if (send_hex(fd, argv[i]) != 0 || read_full(fd, head, sizeof head) != 0) {
            puts("REPLY closed");
            return 0;
        }
        unsigned len = (unsigned)head[0] << 24 | head[1] << 16 | head[2] << 8 | head[3];
        for (unsigned j = 1; j < len; j++) {
            unsigned char c;
            if (read_full(fd, &c, 1) != 0) break;
        }
        printf("REPLY %u\n", head[4]);
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *path = getenv("SSH_AUTH_SOCK");
    if (!path) { puts("NO-SSH_AUTH_SOCK"); return 2; }
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) { perror("connect"); return 3; }
    if (argc > 1 && strcmp(argv[1], "send") == 0) return send_all(fd, argc, argv);
    const unsigned char request[5] = { 0, 0, 0, 1, 11 };
    if (write(fd, request, sizeof request) != sizeof request) { perror("write"); return 4; }
    unsigned char head[9];
    if (read_full(fd, head, sizeof head) != 0 || head[4] != 12) { puts("BAD-REPLY"); return 5; }
    unsigned n = (unsigned)head[5] << 24 | head[6] << 16 | head[7] << 8 | head[8];
    printf("IDENTITIES %u\n", n);
    return 0;
}
