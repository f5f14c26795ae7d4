#!/usr/bin/env bash
# The whole test suite: unit tests, integration tests against the real worker, the CLI
# tests, the MCP server with a real MCP client, and the escape suite. Installs what the
# build needs first.
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
# The integration tests drive the real sandbox-worker binary: build every binary first.
cargo build --release --workspace --bins
cargo test --release --workspace
# The MCP server driven by the official MCP Python SDK (stdio and streamable HTTP).
bash scripts/test-mcp-server.sh
# The escape suite: real attacks, JavaScript and native, against the real sandbox; the
# below-seccomp cases run in the test build of the worker.
build_test_switch_worker
python3 tests/escape/run.py target/release/codemode target/release/sandbox-worker target/escape target/release/sandbox-worker-test-switches
