// attack: fork without end
// category: process
// expect: signal SIGSYS
#include "escape.h"
#include <signal.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    for (int i = 0; i < 1000; i++) syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    MUST_BE_KILLED(0);
}
