// attack: make new sockets with socketpair
// category: network
// expect: signal SIGSYS
#include "escape.h"
#include <sys/socket.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    int sv[2];
    MUST_BE_KILLED(syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, sv));
}
