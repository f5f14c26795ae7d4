// attack: perf_event_open
// category: kernel
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    char attr[128] = {0};
    MUST_BE_KILLED(syscall(SYS_perf_event_open, attr, 0, -1, -1, 0));
}
