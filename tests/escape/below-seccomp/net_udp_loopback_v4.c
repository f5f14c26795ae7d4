// attack: send UDP to a listener on 127.0.0.1 with seccomp gone
// category: below seccomp/network
// expect: exit 0
// layers-removed: seccomp
#include "../native/escape.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

int codemode_payload(int argc, char **argv) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) {
        dprintf(2, "socket() failed (errno %d): seccomp is not gone, the case proves nothing\n", errno);
        return 1;
    }
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(argc > 3 ? atoi(argv[3]) : 9) };
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    MUST_FAIL_WITH(sendto(fd, "x", 1, 0, (struct sockaddr *)&to, sizeof to), ENETUNREACH);
}
