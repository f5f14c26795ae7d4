// attack: reach the hypervisor over AF_VSOCK
// category: network
// expect: signal SIGSYS
#include "escape.h"
#include <sys/socket.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_socket, 40 /* AF_VSOCK */, SOCK_STREAM, 0));
}
