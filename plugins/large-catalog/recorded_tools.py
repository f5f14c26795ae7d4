#!/usr/bin/env python3
"""recorded_tools: one recorded MCP server's tool list as a process plugin, for the
large-catalog example (standard library only).

`recorded_tools.py SERVER.json` serves the tools written down in SERVER.json (from
host/tests/fixtures/catalog/servers/: names, descriptions and input schemas as the real
server lists them) over codemode's plugin protocol (protocol/PLUGINS.md). No service
stands behind them: a call answers with a text that names the tool and echoes its input,
so a program can show that it found and called the right tool.
"""
import json
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: recorded_tools.py SERVER.json (a file of host/tests/fixtures/catalog/servers/)")
    with open(sys.argv[1], encoding="utf-8") as f:
        server = json.load(f)
    plugin = server["plugin"]
    tools = {t["name"]: t for t in server["tools"]}
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue  # notifications (tool/cancel): every call is instant
        if method == "initialize":
            result = {"name": f"recorded-{plugin}", "version": "0.1.0"}
        elif method == "tools/list":
            result = {"tools": list(tools.values())}
        elif method == "tool/call":
            name, args = message["params"]["name"], message["params"]["input"]
            if name in tools:
                text = f"{plugin}.{name} (recorded tool list, no service behind it) called with {json.dumps(args, sort_keys=True)}"
                result = {"content": [{"type": "text", "text": text}]}
            else:
                result = {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}
        else:
            error = {"code": -32601, "message": f"unknown method {method}"}
            print(json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}), flush=True)


if __name__ == "__main__":
    main()
