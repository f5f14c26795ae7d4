#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, from npm) against
# codemode on both sides. Part of scripts/test.sh; runs alone too.
#
#   server: `codemode serve` (with the example tools) against the server scenarios that
#           apply to a server offering codemode's tools;
#   client: codemode as the client of every client scenario below, through
#           tests/conformance/client.py, which turns the scenario's URL into a `url`
#           plugin and does what a person would: `codemode auth login` (this script's
#           adapter plays the browser), `codemode tools`, `codemode run`.
#
# Then the same for revision 2026-07-28, with the suite's first release that has its
# scenarios (a pre-release, pinned): the stateless server (tests/conformance/
# expected-2026.yaml lists the checks that need the suite's own test tools), headers,
# cache hints, and the client's request metadata, headers and request state.
#
# The suite needs Node 22 or later; it runs unchanged under Deno, installed from npm with
# it into target/conformance (once; again only when the versions below change).
source "$(dirname "$0")/lib.sh"
ensure_system_packages
ensure_node
cd "$REPO_ROOT"

SUITE_VERSION="0.1.16"
SUITE_2026_VERSION="0.2.0-alpha.12"
DENO_VERSION="2.9.6"
OUT="$REPO_ROOT/target/conformance"
mkdir -p "$OUT/2026"
want="conformance@$SUITE_VERSION conformance@$SUITE_2026_VERSION deno@$DENO_VERSION"
if [ "$(cat "$OUT/.installed" 2>/dev/null)" != "$want" ]; then
  echo "installing the MCP conformance suites $SUITE_VERSION and $SUITE_2026_VERSION and Deno $DENO_VERSION from npm" >&2
  printf '{ "name": "codemode-conformance", "private": true }\n' >"$OUT/package.json"
  (cd "$OUT" && npm install --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/conformance@$SUITE_VERSION" "@deno/linux-x64-glibc@$DENO_VERSION" >/dev/null)
  printf '{ "name": "codemode-conformance-2026", "private": true }\n' >"$OUT/2026/package.json"
  (cd "$OUT/2026" && npm install --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/conformance@$SUITE_2026_VERSION" >/dev/null)
  echo "$want" >"$OUT/.installed"
fi
DENO="$OUT/node_modules/@deno/linux-x64-glibc/deno"
SUITE=("$DENO" run -A "$OUT/node_modules/@modelcontextprotocol/conformance/dist/index.js")
SUITE_2026=("$DENO" run -A "$OUT/2026/node_modules/@modelcontextprotocol/conformance/dist/index.js")
[ -x target/release/codemode ] && [ -x target/release/sandbox-worker ] || cargo build --release --workspace --bins

SERVER_SCENARIOS=(server-initialize ping tools-list logging-set-level dns-rebinding-protection
  server-sse-polling server-sse-multiple-streams)
CLIENT_SCENARIOS=(initialize tools_call elicitation-sep1034-client-defaults sse-retry)
SERVER_2026_SCENARIOS=(server-stateless tools-list http-header-validation dns-rebinding-protection
  server-sse-multiple-streams)
CLIENT_2026_SCENARIOS=(tools_call request-metadata http-standard-headers sep-2322-client-request-state)

failed=()
run() { # run <name> <command...>: keeps the output of failures only
  local name="$1"; shift
  local log="$OUT/last-$(echo "$name" | tr '/ ' '__').log"
  if "$@" >"$log" 2>&1; then
    echo "conformance: $name passed" >&2
  else
    echo "conformance: $name FAILED; its output:" >&2
    cat "$log" >&2
    failed+=("$name")
  fi
}

# Server side.
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
target/release/codemode serve --example-tools --listen "127.0.0.1:$port" >"$OUT/serve.log" 2>&1 &
serve_pid=$!
trap 'kill "$serve_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
  sleep 0.1
done
for scenario in "${SERVER_SCENARIOS[@]}"; do
  run "server $scenario" "${SUITE[@]}" server --url "http://127.0.0.1:$port/mcp" --scenario "$scenario"
done
for scenario in "${SERVER_2026_SCENARIOS[@]}"; do
  run "server $scenario (2026-07-28)" "${SUITE_2026[@]}" server --url "http://127.0.0.1:$port/mcp" \
    --scenario "$scenario" --spec-version 2026-07-28 --expected-failures "$REPO_ROOT/tests/conformance/expected-2026.yaml"
done
kill "$serve_pid" 2>/dev/null || true

# Client side.
client="python3 $REPO_ROOT/tests/conformance/client.py"
export CODEMODE_BIN="$REPO_ROOT/target/release/codemode"
for scenario in "${CLIENT_SCENARIOS[@]}"; do
  run "client $scenario" "${SUITE[@]}" client --command "$client" --scenario "$scenario"
done
for scenario in "${CLIENT_2026_SCENARIOS[@]}"; do
  run "client $scenario (2026-07-28)" "${SUITE_2026[@]}" client --command "$client" --scenario "$scenario" --spec-version 2026-07-28
done
run "client auth suite" "${SUITE[@]}" client --command "$client" --suite auth
grep -E '^[✓✗] ' "$OUT/last-client_auth_suite.log" >&2 || true

if [ "${#failed[@]}" -gt 0 ]; then
  echo "conformance: ${#failed[@]} failed: ${failed[*]}" >&2
  exit 1
fi
echo "conformance: every scenario passed (${#SERVER_SCENARIOS[@]} server, ${#CLIENT_SCENARIOS[@]} client and the auth suite; for 2026-07-28, ${#SERVER_2026_SCENARIOS[@]} server and ${#CLIENT_2026_SCENARIOS[@]} client)" >&2
