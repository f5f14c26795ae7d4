"""A process plugin for the hostile-work suite (standard library only).

    flood_plugin.py [--tools N] [--tool-bytes B] [--flood-ms MS] [--count FILE]

- lists N tools (default 3), each padded to about B bytes of description and schema
  (a large but legal tool list);
- with --flood-ms, renames a tool `flicker_N` (N counting up) and announces `host/tools.changed`
  every MS milliseconds from the moment it is initialized (a plugin flooding the host
  with real changes);
- with --count, appends one line to FILE for every `tools/list` it answers (so the suite
  can count how often the host asks);
- `echo` returns its input; `environ` reads the host's /proc/<ppid>/environ and says
  what it found; `slow` sleeps `ms` milliseconds.
"""

import argparse
import json
import os
import sys
import threading
import time

parser = argparse.ArgumentParser()
parser.add_argument("--tools", type=int, default=3)
parser.add_argument("--tool-bytes", type=int, default=0)
parser.add_argument("--flood-ms", type=float, default=0)
parser.add_argument("--count", default=None)
args = parser.parse_args()

out_lock = threading.Lock()
flickering = {"count": 0}


def send(message):
    data = json.dumps(message) + "\n"
    with out_lock:
        sys.stdout.write(data)
        sys.stdout.flush()


def tools():
    listed = [
        {"name": "echo", "description": "Returns its input.", "inputSchema": {"type": "object"}},
        {"name": "length", "description": "The length of its input's `s`.", "inputSchema": {"type": "object"}},
        {
            "name": "environ",
            "description": "Reads the host process's environment from /proc.",
            "inputSchema": {"type": "object"},
        },
        {
            "name": "slow",
            "description": "Waits ms milliseconds.",
            "inputSchema": {"type": "object", "properties": {"ms": {"type": "number"}}},
        },
    ]
    padded = max(0, args.tools - len(listed))
    if flickering["count"]:
        listed.append({"name": f"flicker_{flickering['count']}", "description": "Changes.", "inputSchema": {"type": "object"}})
    for i in range(padded):
        pad = "lorem ipsum dolor sit amet " * max(1, args.tool_bytes // 2 // 27)
        listed.append(
            {
                "name": f"tool_{i}",
                "description": f"Tool number {i}. {pad}",
                "inputSchema": {
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": pad}},
                },
            }
        )
    return listed


def flood():
    while True:
        time.sleep(args.flood_ms / 1000)
        flickering["count"] += 1
        send({"jsonrpc": "2.0", "method": "host/tools.changed"})


def call(rid, name, arguments):
    if name == "echo":
        result = {"content": [{"type": "text", "text": json.dumps(arguments)}]}
    elif name == "length":
        result = {"content": [{"type": "text", "text": str(len(arguments.get("s", "")))}]}
    elif name == "environ":
        try:
            with open(f"/proc/{os.getppid()}/environ", "rb") as f:
                found = f.read().decode("utf-8", "replace").split("\0")
            text = json.dumps({"readable": True, "names": sorted(v.split("=", 1)[0] for v in found if v)})
        except OSError as e:
            text = json.dumps({"readable": False, "error": e.strerror})
        result = {"content": [{"type": "text", "text": text}]}
    elif name == "slow":
        time.sleep(float(arguments.get("ms", 1000)) / 1000)
        result = {"content": [{"type": "text", "text": "slept"}]}
    else:
        result = {"content": [{"type": "text", "text": f"no tool {name}"}], "isError": True}
    send({"jsonrpc": "2.0", "id": rid, "result": result})


listing = None
for line in sys.stdin:
    message = json.loads(line)
    method, rid = message.get("method"), message.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"name": "flood"}})
        if args.flood_ms:
            threading.Thread(target=flood, daemon=True).start()
    elif method == "tools/list":
        if args.count:
            with open(args.count, "a") as f:
                f.write("list\n")
        if listing is None or args.flood_ms:
            listing = tools()
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": listing}})
    elif method == "tool/call":
        params = message["params"]
        threading.Thread(target=call, args=(rid, params["name"], params.get("input", {})), daemon=True).start()
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
