// attack: io_uring, which bypasses seccomp
// category: kernel
// expect: errno ENOSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    char params[120] = {0};
    MUST_FAIL_WITH(syscall(SYS_io_uring_setup, 8, params), ENOSYS);
}
