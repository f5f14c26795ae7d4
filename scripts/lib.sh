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
