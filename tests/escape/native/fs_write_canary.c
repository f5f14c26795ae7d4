// attack: overwrite a host file the runner watches (argv[1])
// category: filesystem
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_openat, AT_FDCWD, argc > 1 ? argv[1] : "/tmp/canary", O_WRONLY | O_TRUNC));
}
