// attack: add a key
// category: kernel
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_add_key, "user", "x", "y", 1, -3));
}
