// attack: open(2) instead of openat(2)
// category: filesystem
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    #ifdef SYS_open
    MUST_BE_KILLED(syscall(SYS_open, "/etc/passwd", O_RDONLY));
#else
    MUST_BE_KILLED(syscall(SYS_openat2, AT_FDCWD, "/etc/passwd", 0, 0));
#endif
}
