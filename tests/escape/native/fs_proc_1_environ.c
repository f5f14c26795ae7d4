// attack: read init's environment through /proc/1/environ
// category: filesystem
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_openat, AT_FDCWD, "/proc/1/environ", O_RDONLY));
}
