// attack: reach a host daemon over AF_UNIX
// category: network
// expect: signal SIGSYS
#include "escape.h"
#include <sys/socket.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0));
}
