// attack: send UDP to a listener on [::1] with seccomp gone
// category: below seccomp/network
// expect: exit 0
// layers-removed: seccomp
#include "../native/escape.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

int codemode_payload(int argc, char **argv) {
    int fd = socket(AF_INET6, SOCK_DGRAM, 0);
    if (fd < 0) {
        dprintf(2, "socket() failed (errno %d): seccomp is not gone, the case proves nothing\n", errno);
        return 1;
    }
    struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_port = htons(argc > 4 ? atoi(argv[4]) : 9) };
    inet_pton(AF_INET6, "::1", &to.sin6_addr);
    /* No interface is up: there is no route (ENETUNREACH) or not even a ::1 to send from (EADDRNOTAVAIL). */
    errno = 0;
    long r = sendto(fd, "x", 1, 0, (struct sockaddr *)&to, sizeof to);
    if (r >= 0 || (errno != ENETUNREACH && errno != EADDRNOTAVAIL)) {
        dprintf(2, "ESCAPED: sendto returned %ld, errno %d (%s)\n", r, errno, strerror(errno));
        return 1;
    }
    return 0;
}
