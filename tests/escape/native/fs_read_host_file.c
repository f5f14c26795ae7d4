// attack: read /etc/passwd from the host
// category: filesystem
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY));
}
