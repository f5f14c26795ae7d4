#!/usr/bin/env bash
# Runs the same two-tool-call program on codemode and on its peers (bubblewrap + Deno,
# Deno, isolated-vm, quickjs-emscripten, Node's vm), a fresh isolate/runtime/context/
# process per program, and prints p50/p95 per system and the ratios of their p50s.
#
#   scripts/compare.sh [--n N]        N timed programs per system (default 300, or $N),
#                                     after 20 warm-up programs that are dropped
#
# Installs the peers once, into target/compare (a second run reuses them):
#   - from Debian: bubblewrap when `bwrap` is missing; python3, make, g++ when missing
#     (isolated-vm is built from source); nodejs and npm when there is no node
#   - from npm: deno (the @deno/linux-*-glibc package holds the binary), isolated-vm
#     (built from source with node-gyp), quickjs-emscripten
# codemode: $CODEMODE_BIN, or target/release/codemode, copied with its sandbox-worker into
# a private folder at the start so a rebuild during the run does not change what is measured.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$REPO_ROOT/target/compare"
DENO_VERSION="2.9.6"
ISOLATED_VM_VERSION="5.0.4"          # 6.x needs Node >= 22, 7.x Node >= 24; 5.0.x supports Node >= 18
QUICKJS_EMSCRIPTEN_VERSION="0.32.0"

N="${N:-300}"
while [ $# -gt 0 ]; do
  case "$1" in
    --n) N="$2"; shift 2 ;;
    --n=*) N="${1#--n=}"; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (try --help)" >&2; exit 2 ;;
  esac
done

log() { echo "compare: $*" >&2; }
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
APT_UPDATED=0
apt_install() {
  if [ "$APT_UPDATED" -eq 0 ]; then
    $SUDO apt-get update -qq
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

# --- system packages -------------------------------------------------------------------
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing from Debian: ${missing[*]}"
  apt_install "${missing[@]}"
fi

# --- npm packages (cached) -------------------------------------------------------------
case "$(uname -m)" in
  x86_64) DENO_PKG="@deno/linux-x64-glibc" ;;
  aarch64) DENO_PKG="@deno/linux-arm64-glibc" ;;
  *) echo "no Deno package for $(uname -m)" >&2; exit 1 ;;
esac
NODE_DIR="$CACHE/node"
# isolated-vm is a native addon: a new Node ABI needs a new build.
STAMP="deno=$DENO_VERSION isolated-vm=$ISOLATED_VM_VERSION quickjs-emscripten=$QUICKJS_EMSCRIPTEN_VERSION node=$(node -p 'process.versions.node + "/" + process.versions.modules')"
mkdir -p "$NODE_DIR"
if [ "$(cat "$NODE_DIR/.installed" 2>/dev/null)" != "$STAMP" ] \
  || ! (cd "$NODE_DIR" && node -e 'require("isolated-vm"); require("quickjs-emscripten")' >/dev/null 2>&1); then
  log "installing from npm into $NODE_DIR (isolated-vm builds from source: a few minutes)"
  rm -rf "$NODE_DIR/node_modules" "$NODE_DIR/package-lock.json" "$NODE_DIR/.installed"
  echo '{ "name": "codemode-compare-peers", "private": true }' >"$NODE_DIR/package.json"
  # node-gyp needs Node's headers: use the installed ones when they match this node
  # (no download), else node-gyp fetches them as usual.
  if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node_version.h ] \
    && [ "$(node -p 'process.execPath')" = /usr/bin/node ]; then
    export npm_config_nodedir=/usr
  fi
  (cd "$NODE_DIR" && npm install --no-audit --no-fund --loglevel=error --build-from-source \
    "$DENO_PKG@$DENO_VERSION" "isolated-vm@$ISOLATED_VM_VERSION" "quickjs-emscripten@$QUICKJS_EMSCRIPTEN_VERSION" >&2)
  echo "$STAMP" >"$NODE_DIR/.installed"
fi
DENO_BIN="$NODE_DIR/node_modules/$DENO_PKG/deno"
[ -x "$DENO_BIN" ] || chmod +x "$DENO_BIN"
"$DENO_BIN" --version >/dev/null

# Deno's cache: made once here, then bound read-only into every sandboxed run. The
# program imports nothing, so nothing is downloaded; runs never reach the network.
export DENO_DIR="$CACHE/deno-dir"
export DENO_NO_UPDATE_CHECK=1
mkdir -p "$DENO_DIR"
echo 'console.log(JSON.stringify({ ok: 1 }))' | "$DENO_BIN" run --no-prompt --quiet - >/dev/null

# --- codemode --------------------------------------------------------------------------
BIN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/codemode-compare.XXXXXX")"
trap 'rm -rf "$BIN_DIR"' EXIT
if [ -n "${CODEMODE_BIN:-}" ]; then
  SRC_DIR="$(cd "$(dirname "$CODEMODE_BIN")" && pwd)"
  cp "$CODEMODE_BIN" "$BIN_DIR/codemode"
  WORKER_SRC="${CODEMODE_WORKER:-$SRC_DIR/sandbox-worker}"
else
  SRC_DIR="$REPO_ROOT/target/release"
  cp "$SRC_DIR/codemode" "$BIN_DIR/codemode" 2>/dev/null || {
    echo "no $SRC_DIR/codemode: build it with 'cargo build --release --workspace --bins', or set CODEMODE_BIN" >&2
    exit 1
  }
  WORKER_SRC="$SRC_DIR/sandbox-worker"
fi
cp "$WORKER_SRC" "$BIN_DIR/sandbox-worker"
unset CODEMODE_WORKER

# --- run -------------------------------------------------------------------------------
node "$REPO_ROOT/scripts/compare/run.mjs" \
  --n "$N" \
  --codemode "$BIN_DIR/codemode" \
  --deno "$DENO_BIN" \
  --bwrap "$(command -v bwrap)" \
  --node-modules "$NODE_DIR/node_modules"
