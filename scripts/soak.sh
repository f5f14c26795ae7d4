#!/usr/bin/env bash
# The soak run (opt-in): 10,000 programs at 16 in flight against `codemode serve` while a
# plugin is killed, a plugin is stopped (SIGSTOP) and the template is killed; checks that
# every program gets a clear outcome, later ones succeed, descriptors, zombies and host
# RSS stay flat, and killing the host leaves no worker or plugin behind. Prints figures.
#   scripts/soak.sh [PROGRAMS] [IN_FLIGHT]
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
cargo build --release --workspace --bins
ensure_mcp_venv
exec "$MCP_VENV/bin/python" tests/soak/soak.py target/release/codemode "${1:-10000}" "${2:-16}"
