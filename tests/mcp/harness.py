"""What the MCP test scripts share: where the repository and the codemode binary are
(the binary is the scripts' first argument), and `check`, which counts every check it
makes so that a script can report how many passed."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CODEMODE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/release/codemode"))
CHECKS = 0


def check(condition, what):
    global CHECKS
    CHECKS += 1
    if not condition:
        raise AssertionError(what)
