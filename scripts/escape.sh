#!/usr/bin/env bash
# The escape suite: real attacks against the sandbox, JavaScript and native. Prints a
# table and exits non-zero on any escape. Part of scripts/test.sh.
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
cargo build --release --workspace --bins
# The below-seccomp cases run in the test build of the worker (built and kept aside).
build_test_switch_worker
python3 tests/escape/run.py target/release/codemode target/release/sandbox-worker target/escape target/release/sandbox-worker-test-switches
