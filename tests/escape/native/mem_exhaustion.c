// attack: allocate without bound
// category: memory
// expect: exit 0
#include "escape.h"

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    for (long i = 0; i < 100000; i++) {
        char *p = malloc(1 << 20);
        if (!p) return 0; /* RLIMIT_DATA refused it */
        memset(p, 1, 1 << 20);
    }
    dprintf(2, "ESCAPED: allocated 100 GiB\n");
    return 1;
}
