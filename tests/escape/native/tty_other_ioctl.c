// attack: any other ioctl (FIONREAD)
// category: terminal
// expect: signal SIGSYS
#include "escape.h"
#include <sys/ioctl.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    int n;
    MUST_BE_KILLED(syscall(SYS_ioctl, 1, FIONREAD, &n));
}
