// attack: fork with seccomp gone; RLIMIT_NPROC 0 must apply because the worker is an unprivileged uid outside its namespace (root is exempt)
// category: below seccomp/processes
// expect: exit 0
// layers-removed: seccomp
#include "../native/escape.h"
#include <sys/wait.h>

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    errno = 0;
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    if (pid > 0) {
        waitpid(pid, NULL, 0);
        dprintf(2, "ESCAPED: fork() made process %d despite RLIMIT_NPROC 0 (uid %d)\n", pid, getuid());
        return 1;
    }
    if (errno != EAGAIN) {
        dprintf(2, "fork() failed with errno %d (%s), not EAGAIN from RLIMIT_NPROC\n", errno, strerror(errno));
        return 1;
    }
    return 0;
}
