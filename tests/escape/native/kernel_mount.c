// attack: mount a filesystem
// category: kernel
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_mount, "none", "/", "tmpfs", 0, 0));
}
