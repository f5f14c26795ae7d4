// attack: dump the host's interfaces and addresses over rtnetlink with seccomp gone
// category: below seccomp/network
// expect: exit 0
// layers-removed: seccomp
#include "../native/escape.h"
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>

/* Sends one dump request and counts what comes back: interfaces other than lo, and any address. */
static int dump(int fd, int type, int *others) {
    struct { struct nlmsghdr h; struct rtgenmsg g; } req = {
        .h = { .nlmsg_len = sizeof req, .nlmsg_type = type, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
        .g = { .rtgen_family = AF_UNSPEC },
    };
    if (send(fd, &req, sizeof req, 0) < 0) return -1;
    char buf[65536];
    for (;;) {
        long n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return -1;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type == NLMSG_DONE) return 0;
            if (h->nlmsg_type == NLMSG_ERROR) return -1;
            if (h->nlmsg_type == RTM_NEWADDR) (*others)++;
            if (h->nlmsg_type == RTM_NEWLINK) {
                struct ifinfomsg *ifi = NLMSG_DATA(h);
                if (!(ifi->ifi_flags & IFF_LOOPBACK)) (*others)++;
            }
        }
    }
}

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    int fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
    if (fd < 0) {
        dprintf(2, "socket(AF_NETLINK) failed (errno %d): seccomp is not gone, the case proves nothing\n", errno);
        return 1;
    }
    int links = 0, addresses = 0;
    if (dump(fd, RTM_GETLINK, &links) < 0 || dump(fd, RTM_GETADDR, &addresses) < 0) {
        dprintf(2, "the dump failed (errno %d); nothing was learned\n", errno);
        return 0;
    }
    if (links || addresses) {
        dprintf(2, "ESCAPED: netlink shows %d interfaces besides loopback and %d addresses\n", links, addresses);
        return 1;
    }
    return 0;
}
