#!/usr/bin/env python3
"""Writes the large-catalog example's configuration (scripts/large-catalog.sh runs it).

    make_config.py EVERYTHING_BIN OUT.toml [--budget N|unlimited]

The MCP reference "everything" server (installed from npm) as an `mcp` plugin, beside
every other recorded server of host/tests/fixtures/catalog/servers/ as a process plugin
(plugins/large-catalog/recorded_tools.py), each with its one-line `summary`: some 1,800
tools from 85 servers, far past the default `catalog_budget`.
"""
import argparse
import json
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]
SERVERS = REPO / "host/tests/fixtures/catalog/servers"
RECORDED = REPO / "plugins/large-catalog/recorded_tools.py"


def toml_string(s):
    return json.dumps(s)  # a JSON string is a valid TOML basic string


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("everything_bin")
    parser.add_argument("out")
    parser.add_argument("--budget", default=None, help="[server] catalog_budget (default: codemode's own)")
    args = parser.parse_args()
    lines = ["# Written by plugins/large-catalog/make_config.py: the large-catalog example.", ""]
    if args.budget is not None:
        budget = toml_string(args.budget) if args.budget == "unlimited" else str(int(args.budget))
        lines += ["[server]", f"catalog_budget = {budget}", ""]
    lines += [
        "[[plugin]]",
        'name = "everything"',
        'kind = "mcp"',
        f"command = {toml_string(str(pathlib.Path(args.everything_bin).resolve()))}",
        'args = ["stdio"]',
        "timeout_ms = 30000",
        'summary = "The MCP reference server: echo, sums, images, annotations, resources, long operations, elicitation"',
        "",
    ]
    for path in sorted(SERVERS.glob("*.json")):
        server = json.loads(path.read_text(encoding="utf-8"))
        if server["plugin"] == "everything":
            continue  # the real server stands in for its recording
        lines += [
            "[[plugin]]",
            f"name = {toml_string(server['plugin'])}",
            'kind = "process"',
            'command = "python3"',
            f"args = [{toml_string(str(RECORDED))}, {toml_string(str(path))}]",
            f"summary = {toml_string(server.get('summary', ''))}",
            "",
        ]
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    main()
