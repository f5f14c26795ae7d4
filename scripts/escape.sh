#!/usr/bin/env bash
# The escape suite: real attacks against the sandbox, JavaScript and native. Prints a
# table and exits non-zero on any escape. Part of scripts/test.sh.
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
cargo build --release --workspace --bins
python3 tests/escape/run.py target/release/codemode target/release/sandbox-worker target/escape
