#!/usr/bin/env bash
# The MCP server with a real client: installs the official MCP Python SDK from PyPI into
# a virtualenv under target/, then drives `codemode mcp` (stdio) and `codemode serve`
# (streamable HTTP) with it (tests/mcp/test_mcp_server.py). Part of scripts/test.sh.
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
MCP_SDK_VERSION="2.3.0"
VENV="target/mcp-venv"
if ! "$VENV/bin/python" -c "import mcp, importlib.metadata as m; assert m.version('mcp') == '$MCP_SDK_VERSION'" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "mcp==$MCP_SDK_VERSION"
fi
[ -x target/release/codemode ] && [ -x target/release/sandbox-worker ] || cargo build --release --workspace --bins
"$VENV/bin/python" tests/mcp/test_mcp_server.py target/release/codemode
