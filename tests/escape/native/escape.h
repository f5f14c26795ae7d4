/*
 * Shared helpers for native escape payloads.
 *
 * A payload is a shared object exporting `int codemode_payload(int argc, char **argv)`.
 * `codemode sandbox-exec -- payload.so ARGS` loads it before the sandbox hides the
 * filesystem and calls it inside a worker under the worker's exact policy. A payload
 * returns 0 when the attack failed the way the case expects, and 1 (after saying what
 * happened on stderr) when it got through. Cases that expect the kernel to kill the
 * worker (SIGSYS) return 1 if the system call comes back at all.
 *
 * argv[1], when given, is a canary file on the host; argv[2] a TCP port on 127.0.0.1
 * that the runner listens on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The call must never return: the seccomp allowlist kills the worker first. */
#define MUST_BE_KILLED(call)                                                           \
    do {                                                                               \
        long _r = (long)(call);                                                        \
        dprintf(2, "ESCAPED: %s returned %ld (errno %d: %s)\n", #call, _r, errno,      \
                strerror(errno));                                                      \
        return 1;                                                                      \
    } while (0)

/* The call must fail with exactly this errno. */
#define MUST_FAIL_WITH(call, expected)                                                 \
    do {                                                                               \
        errno = 0;                                                                     \
        long _r = (long)(call);                                                        \
        if (_r != -1 || errno != (expected)) {                                         \
            dprintf(2, "ESCAPED: %s returned %ld, errno %d (%s); expected errno %d\n", \
                    #call, _r, errno, strerror(errno), (expected));                    \
            return 1;                                                                  \
        }                                                                              \
        return 0;                                                                      \
    } while (0)
