// attack: write its own memory through /proc/self/mem
// category: filesystem
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_openat, AT_FDCWD, "/proc/self/mem", O_RDWR));
}
