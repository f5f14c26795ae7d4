#!/usr/bin/env bash
# The large-catalog mode on a real example: the MCP reference "everything" server (from
# npm) beside 84 recorded MCP servers' tool lists (host/tests/fixtures/catalog/servers,
# served by plugins/large-catalog/recorded_tools.py), some 1,800 tools. Writes
# target/large-catalog/codemode.toml, prints the size of what the agent reads (past the
# budget, and with every tool declared), then runs a program that searches the catalog
# and calls what it found.
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
ensure_mcp_everything
[ -x target/release/codemode ] && [ -x target/release/sandbox-worker ] || cargo build --release --workspace --bins
out=target/large-catalog
python3 plugins/large-catalog/make_config.py "$MCP_EVERYTHING_BIN" "$out/codemode.toml"
python3 plugins/large-catalog/make_config.py "$MCP_EVERYTHING_BIN" "$out/unlimited.toml" --budget unlimited
echo "== the execute description, past catalog_budget (written to $out/description.txt):"
target/release/codemode tools --config "$out/codemode.toml" --description >"$out/description.txt"
echo "== with catalog_budget = \"unlimited\":"
target/release/codemode tools --config "$out/unlimited.toml" --description >/dev/null
echo "== one program searches, then calls:"
program='const [hit] = await tools.$search("sum of two numbers", { limit: 1 });
return { call: hit.call, answer: await tools[hit.plugin][hit.tool]({ a: 2, b: 3 }) };'
echo "$program"
echo "$program" | target/release/codemode run --config "$out/codemode.toml" -
echo
