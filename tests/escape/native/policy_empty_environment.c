// attack: read secrets from the environment
// category: policy
// expect: exit 0
#include "escape.h"
extern char **environ;

int codemode_payload(int argc, char **argv) {
    (void)argc;
    (void)argv;
    if (environ && environ[0]) { dprintf(2, "ESCAPED: environment holds %s\n", environ[0]); return 1; }
    return 0;
}
