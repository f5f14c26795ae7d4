// attack: make itself dumpable again
// category: process
// expect: signal SIGSYS
#include "escape.h"
#include <sys/prctl.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0));
}
