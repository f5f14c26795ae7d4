// attack: write another process's memory
// category: process
// expect: signal SIGSYS
#include "escape.h"
#include <sys/uio.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    char b[8]; struct iovec l = { b, 8 }, r = { (void *)0x1000, 8 };
    MUST_BE_KILLED(syscall(SYS_process_vm_writev, 1, &l, 1, &r, 1, 0));
}
