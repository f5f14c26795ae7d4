// attack: make memory executable (W^X)
// category: memory
// expect: signal SIGSYS
#include "escape.h"
#include <sys/mman.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    static char page[8192] __attribute__((aligned(4096)));
    MUST_BE_KILLED(syscall(SYS_mprotect, page, 4096, PROT_READ | PROT_EXEC));
}
