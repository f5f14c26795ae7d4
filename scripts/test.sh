#!/usr/bin/env bash
# The whole test suite: unit tests, integration tests against the real worker, the CLI
# tests, the seed-format plugins with their real npm packages, the MCP server with a
# real MCP client, and the escape suite. Installs what the build needs first.
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
# The integration tests drive the real sandbox-worker binary: build every binary first.
cargo build --release --workspace --bins
# tools.$search's sentence encoder (tests/catalog_search.rs and the large-catalog test
# require it).
ensure_search_model
export CODEMODE_SEARCH_MODEL="$SEARCH_MODEL_DIR"
# The seed-format plugin fixtures with their npm packages (cached under target/formats).
bash scripts/npm-fixtures.sh
SCHEMA_TEST_NODE_MODULES="$REPO_ROOT/target/formats/schema-libs/node_modules" node --test --test-reporter=dot tests/js/plugin_schema.test.mjs
# The search fixtures follow their rules (no query holds its tool's words).
python3 host/tests/fixtures/catalog/check.py >/dev/null
cargo test --release --workspace
# The MCP server driven by the official MCP Python SDK (stdio and streamable HTTP).
bash scripts/test-mcp-server.sh
# The hostile-work suite: attacks on the work the host does for programs and plugins
# (searches, returned media, plugin modules, change floods, large tool lists, token
# files, approvals), each against the real binary, with host CPU, peak RSS and /healthz
# latency bounds.
python3 tests/hostile/run.py target/release/codemode
# The official MCP conformance suite, codemode as the server and as the client.
bash scripts/conformance.sh
# The Kubernetes manifests and the seccomp profile in deploy/, then the image under a
# container runtime (podman from Debian) run as the Deployment runs it.
bash scripts/check-deploy.sh
bash scripts/container-check.sh
# The escape suite: real attacks, JavaScript and native, against the real sandbox; the
# below-seccomp cases run in the test build of the worker.
build_test_switch_worker
python3 tests/escape/run.py target/release/codemode target/release/sandbox-worker target/escape target/release/sandbox-worker-test-switches
