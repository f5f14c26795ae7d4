// attack: the new mount API (open_tree)
// category: kernel
// expect: errno ENOSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_FAIL_WITH(syscall(SYS_open_tree, AT_FDCWD, "/", 0), ENOSYS);
}
