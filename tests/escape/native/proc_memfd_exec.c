// attack: write code to a memfd and execute it
// category: process
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_memfd_create, "x", 0));
}
