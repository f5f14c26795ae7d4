#!/usr/bin/env bash
# Type-checks the worker against real V8. The v8 crate's build script would download a
# prebuilt library; DOCS_RS=1 makes it use the bindings it ships instead.
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
DOCS_RS=1 CARGO_TARGET_DIR="$REPO_ROOT/target/v8-check" cargo check -p sandbox-worker --no-default-features --features v8
