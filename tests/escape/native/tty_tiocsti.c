// attack: inject keystrokes into the terminal (TIOCSTI)
// category: terminal
// expect: errno EPERM
#include "escape.h"
#include <sys/ioctl.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    char c = 'x';
    MUST_FAIL_WITH(syscall(SYS_ioctl, 2, TIOCSTI, &c), EPERM);
}
