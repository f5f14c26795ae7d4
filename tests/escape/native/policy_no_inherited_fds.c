// attack: use an inherited descriptor: only stdout and stderr may be open
// category: policy
// expect: exit 0
#include "escape.h"
#include <poll.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    for (int fd = 0; fd < 1024; fd++) {
        struct pollfd p = { .fd = fd, .events = 0 };
        syscall(SYS_poll, &p, 1, 0);
        int open = !(p.revents & POLLNVAL);
        if (open != (fd == 1 || fd == 2)) { dprintf(2, "ESCAPED: descriptor %d is %s\n", fd, open ? "open" : "closed"); return 1; }
    }
    return 0;
}
