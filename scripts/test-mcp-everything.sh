#!/usr/bin/env bash
# Opt-in: installs the MCP reference "everything" server from npm into target/ and runs
# the tests that use it as a plugin (started over stdio, and reached over streamable HTTP).
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
command -v npm >/dev/null || { echo "npm is needed (Node.js 18+)" >&2; exit 1; }
mkdir -p target/mcp-everything
npm install --prefix target/mcp-everything --no-audit --no-fund @modelcontextprotocol/server-everything >/dev/null
export MCP_EVERYTHING_BIN="$REPO_ROOT/target/mcp-everything/node_modules/.bin/mcp-server-everything"
cargo build --release --workspace --bins
# Over stdio, and in its streamable-HTTP mode as a `url` plugin.
cargo test --release -p codemode --test mcp_plugins -- --ignored the_mcp_everything_server
