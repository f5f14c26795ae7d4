// attack: create a file anywhere (/tmp)
// category: filesystem
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_openat, AT_FDCWD, "/tmp/codemode-escape", O_WRONLY | O_CREAT, 0644));
}
