// attack: connect to a loopback TCP listener over MPTCP with seccomp gone
// category: below seccomp/network
// expect: exit 0
// layers-removed: seccomp
#include "../native/escape.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

int codemode_payload(int argc, char **argv) {
    int fd = socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP);
    if (fd < 0 && errno != EPROTONOSUPPORT && errno != EINVAL && errno != ENOPROTOOPT) {
        dprintf(2, "socket() failed (errno %d): seccomp is not gone, the case proves nothing\n", errno);
        return 1;
    }
    if (fd < 0) {
        dprintf(2, "this kernel has no MPTCP (errno %d): nothing to reach\n", errno);
        return 0;
    }
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(argc > 2 ? atoi(argv[2]) : 9) };
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    errno = 0;
    long r = connect(fd, (struct sockaddr *)&to, sizeof to);
    if (r == 0 || (errno != ENETUNREACH && errno != EACCES)) {
        dprintf(2, "ESCAPED: MPTCP connect returned %ld, errno %d (%s)\n", r, errno, strerror(errno));
        return 1;
    }
    return 0;
}
