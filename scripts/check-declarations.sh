#!/usr/bin/env bash
# Opt-in: type-checks the TypeScript declarations that the MCP server gives agents (for
# the bundled example plugins) with the real TypeScript compiler from npm, together with
# a sample program written against them (tests/typescript/sample-program.ts).
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
command -v npm >/dev/null || { echo "npm is needed (Node.js 18+)" >&2; exit 1; }
mkdir -p target/tsc
[ -x target/tsc/node_modules/.bin/tsc ] || npm install --prefix target/tsc --no-audit --no-fund typescript@5 >/dev/null
cargo build --release --workspace --bins
./target/release/codemode tools --typescript --config plugins/codemode.toml > target/tsc/tools.d.ts
cp tests/typescript/sample-program.ts target/tsc/
target/tsc/node_modules/.bin/tsc --noEmit --strict --target es2022 --lib es2022 target/tsc/tools.d.ts target/tsc/sample-program.ts
echo "declarations type-check: $(grep -c '(input' target/tsc/tools.d.ts) tool signatures, sample program OK"
