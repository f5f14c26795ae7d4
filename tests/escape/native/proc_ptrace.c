// attack: ptrace the host (pid 1 outside is invisible; try the parent)
// category: process
// expect: signal SIGSYS
#include "escape.h"
#include <sys/ptrace.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    MUST_BE_KILLED(syscall(SYS_ptrace, PTRACE_ATTACH, getppid(), 0, 0));
}
