// attack: the new mount API (fsopen)
// category: kernel
// expect: errno ENOSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_FAIL_WITH(syscall(SYS_fsopen, "tmpfs", 0), ENOSYS);
}
