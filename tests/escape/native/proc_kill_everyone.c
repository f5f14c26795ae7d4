// attack: kill every process it can see
// category: process
// expect: signal SIGSYS
#include "escape.h"
#include <signal.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_kill, -1, SIGKILL));
}
