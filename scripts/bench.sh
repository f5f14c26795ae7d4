#!/usr/bin/env bash
# Prints the start-up and tool-call figures (p50/p95) of a release build.
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
cargo build --release --workspace --bins
cargo bench -p codemode --bench execute
