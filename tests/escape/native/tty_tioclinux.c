// attack: TIOCLINUX console tricks
// category: terminal
// expect: errno EPERM
#include "escape.h"
#include <sys/ioctl.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    char c = 2;
    MUST_FAIL_WITH(syscall(SYS_ioctl, 2, TIOCLINUX, &c), EPERM);
}
