// attack: unshare a new user namespace
// category: kernel
// expect: signal SIGSYS
#include "escape.h"
#include <sched.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_unshare, CLONE_NEWUSER));
}
