#!/usr/bin/env bash
# The whole test suite: unit tests, integration tests against the real worker, and the
# CLI tests. Installs what the build needs first.
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
# The integration tests drive the real sandbox-worker binary: build every binary first.
cargo build --release --workspace --bins
cargo test --release --workspace
# The escape suite: real attacks, JavaScript and native, against the real sandbox.
python3 tests/escape/run.py target/release/codemode target/release/sandbox-worker target/escape
