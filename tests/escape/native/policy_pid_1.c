// attack: see other processes: it must be pid 1 of its namespace
// category: policy
// expect: exit 0
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    long pid = syscall(SYS_getpid);
    if (pid != 1) { dprintf(2, "ESCAPED: pid is %ld, not 1\n", pid); return 1; }
    return 0;
}
