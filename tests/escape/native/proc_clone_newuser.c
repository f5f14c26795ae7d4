// attack: clone into a new user namespace
// category: process
// expect: signal SIGSYS
#include "escape.h"
#include <sched.h>
#include <signal.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0));
}
