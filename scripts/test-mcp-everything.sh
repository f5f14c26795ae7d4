#!/usr/bin/env bash
# Opt-in: installs the MCP reference "everything" server from npm into target/ and runs
# the tests that use it as a plugin (started over stdio, and reached over streamable HTTP).
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
ensure_mcp_everything
cargo build --release --workspace --bins
# Over stdio, and in its streamable-HTTP mode as a `url` plugin.
cargo test --release -p codemode --test mcp_plugins -- --ignored the_mcp_everything_server
