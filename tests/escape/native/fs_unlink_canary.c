// attack: delete the host's canary file
// category: filesystem
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_unlinkat, AT_FDCWD, argc > 1 ? argv[1] : "/tmp/canary", 0));
}
