// attack: change personality (READ_IMPLIES_EXEC)
// category: process
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_personality, 0x0400000));
}
