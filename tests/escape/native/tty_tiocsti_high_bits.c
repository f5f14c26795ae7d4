// attack: TIOCSTI with high bits set to dodge a 64-bit compare
// category: terminal
// expect: errno EPERM
#include "escape.h"
#include <sys/ioctl.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    char c = 'x';
    MUST_FAIL_WITH(syscall(SYS_ioctl, 2, (1UL << 32) | TIOCSTI, &c), EPERM);
}
