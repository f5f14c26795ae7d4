// attack: load a BPF program
// category: kernel
// expect: signal SIGSYS
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    char attr[128] = {0};
    MUST_BE_KILLED(syscall(SYS_bpf, 5, attr, sizeof attr));
}
