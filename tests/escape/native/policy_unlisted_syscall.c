// attack: any unlisted system call (uname)
// category: policy
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    char buf[512];
    MUST_BE_KILLED(syscall(SYS_uname, buf));
}
