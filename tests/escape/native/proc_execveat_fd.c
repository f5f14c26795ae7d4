// attack: execute through an inherited descriptor
// category: process
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    char *av[] = {"x", 0};
    MUST_BE_KILLED(syscall(SYS_execveat, 1, "", av, 0, 0x1000 /* AT_EMPTY_PATH */));
}
