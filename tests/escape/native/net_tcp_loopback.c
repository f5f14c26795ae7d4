// attack: connect to a TCP listener on 127.0.0.1 opened by the runner
// category: network
// expect: signal SIGSYS
#include "escape.h"
#include <sys/socket.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_socket, AF_INET, SOCK_STREAM, 0));
}
