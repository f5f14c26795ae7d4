// attack: install another seccomp filter
// category: policy
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_seccomp, 1, 0, 0));
}
