// attack: start a thread (clone with thread flags)
// category: process
// expect: signal SIGSYS
#include "escape.h"
#include <sched.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_clone, CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM, 0, 0, 0, 0));
}
