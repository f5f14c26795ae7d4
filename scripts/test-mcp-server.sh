#!/usr/bin/env bash
# The MCP server with a real client: installs the official MCP Python SDK from PyPI into
# a virtualenv under target/, then drives `codemode mcp` (stdio) and `codemode serve`
# (streamable HTTP) with it (tests/mcp/test_mcp_server.py), a remote MCP server built with
# the same SDK as a plugin (tests/mcp/test_remote_plugins.py), and the seed-format plugins
# behind it (tests/mcp/test_plugin_formats.py, tests/mcp/test_podcode_output.py), the
# large-catalog example with the MCP
# reference server from npm (tests/mcp/test_large_catalog.py), and the service features
# (stateless replicas, operations endpoints, JSON log: tests/mcp/test_service.py), and
# each tool call's identity, subagents and progress (tests/mcp/test_plugin_ids.py),
# workspace files and artifacts (tests/mcp/test_files.py), and
# seed 001's skills and agents (tests/mcp/test_skills.py).
# Part of scripts/test.sh.
source "$(dirname "$0")/lib.sh"
ensure_system_packages
cd "$REPO_ROOT"
ensure_mcp_venv
[ -x target/release/codemode ] && [ -x target/release/sandbox-worker ] || cargo build --release --workspace --bins
"$MCP_VENV/bin/python" tests/mcp/test_mcp_server.py target/release/codemode
# As a service: stateless replicas, /healthz, /readyz, /metrics and the JSON log.
"$MCP_VENV/bin/python" tests/mcp/test_service.py target/release/codemode
# MCP 2026-07-28 on both sides: strict clients (Python SDK 2.x and TypeScript SDK v2) on
# stdio and HTTP, approvals through Multi Round-Trip Requests, replicas behind a
# round-robin proxy, 2026-only plugin servers (TypeScript, stdio and HTTP) and a Python
# one asking their own questions.
ensure_ts_sdk
"$MCP_VENV/bin/python" tests/mcp/test_mcp_2026.py target/release/codemode "$TS_SDK_DIR"
# Plugins' model calls (host.llm, host.decide, api.models.prompt) answered by the
# client's model: sampling/createMessage (2025-11-25) and input-required rounds (2026-07-28).
"$MCP_VENV/bin/python" tests/mcp/test_sampling.py target/release/codemode
# A remote MCP server (the SDK's own, over streamable HTTP) as a plugin.
"$MCP_VENV/bin/python" tests/mcp/test_remote_plugins.py target/release/codemode
# OAuth against the SDK's own authorization server: login, refresh, logout.
"$MCP_VENV/bin/python" tests/mcp/test_oauth_plugins.py target/release/codemode
# The large-catalog example: the MCP reference server (npm) beside 84 recorded servers.
ensure_mcp_everything
"$MCP_VENV/bin/python" tests/mcp/test_large_catalog.py target/release/codemode "$MCP_EVERYTHING_BIN"
# The seed systems' plugin formats behind the server (approvals through elicitation).
[ -d target/formats/zhin/node_modules ] || bash scripts/npm-fixtures.sh
"$MCP_VENV/bin/python" tests/mcp/test_plugin_formats.py target/release/codemode
# Podcode's truncation and change journal as the agent receives them.
"$MCP_VENV/bin/python" tests/mcp/test_podcode_output.py target/release/codemode
# Each tool call's identity, its subagents' lifetime, and progress from inside a call
# (seed 000 subagents, plico's keys and ctx.context, Podcode's ctx.metadata).
"$MCP_VENV/bin/python" tests/mcp/test_plugin_ids.py target/release/codemode
# Workspace files (seed 003's host.workspace, Podcode's mainCwd) beneath the client's
# root, and plico's artifacts as resources.
"$MCP_VENV/bin/python" tests/mcp/test_files.py target/release/codemode
# Seed 001's skills, agents and deferred catalog with the seed's example layout.
"$MCP_VENV/bin/python" tests/mcp/test_skills.py target/release/codemode
