// attack: probe host paths with stat
// category: filesystem
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    char buf[256];
    MUST_BE_KILLED(syscall(SYS_newfstatat, AT_FDCWD, "/etc/passwd", buf, 0));
}
