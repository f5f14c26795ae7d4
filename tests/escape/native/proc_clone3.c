// attack: clone3, whose arguments seccomp cannot inspect
// category: process
// expect: errno ENOSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    char args[88] = {0};
    MUST_FAIL_WITH(syscall(SYS_clone3, args, sizeof args), ENOSYS);
}
