// attack: rename a host file
// category: filesystem
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_renameat2, AT_FDCWD, "/etc/hostname", AT_FDCWD, "/etc/hostname.x", 0));
}
