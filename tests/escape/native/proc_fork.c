// attack: fork a child
// category: process
// expect: signal SIGSYS
#include "escape.h"
#include <signal.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    #ifdef SYS_fork
    MUST_BE_KILLED(syscall(SYS_fork));
#else
    MUST_BE_KILLED(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0));
#endif
}
