// attack: execute /bin/sh
// category: process
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    char *av[] = {"/bin/sh", "-c", "id", 0};
    MUST_BE_KILLED(syscall(SYS_execve, "/bin/sh", av, 0));
}
