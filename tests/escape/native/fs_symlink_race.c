// attack: plant a symlink for the host to follow
// category: filesystem
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_symlinkat, "/etc/shadow", AT_FDCWD, "/tmp/result.json"));
}
