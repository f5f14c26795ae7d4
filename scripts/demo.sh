#!/usr/bin/env bash
# The main job: builds codemode and runs an example program against the bundled example
# tools, printing what an agent would read.
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
cargo build --release --workspace --bins
ensure_search_model
exec ./target/release/codemode run --config plugins/codemode.toml "${1:-scripts/examples/notes-report.js}"
