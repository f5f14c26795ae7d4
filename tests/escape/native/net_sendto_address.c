// attack: send to an address through an existing descriptor
// category: network
// expect: signal SIGSYS
#include "escape.h"
#include <sys/socket.h>
#include <netinet/in.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(9) };
    MUST_BE_KILLED(syscall(SYS_sendto, 1, "x", 1, 0, &a, sizeof a));
}
