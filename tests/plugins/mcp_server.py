#!/usr/bin/env python3
"""A small MCP server over stdio, standard library only, for codemode's tests.

Tools: `add` (text), `stats` (structuredContent with an outputSchema), `sleep`
(cancellable; cancellations are appended to $CANCEL_LOG), `grow` (adds a tool and sends
notifications/tools/list_changed), `fail` (isError), `env` (the names of its
environment variables, to show what the host passes on).
"""
import json
import os
import sys
import threading
import time

lock = threading.Lock()
cancelled = set()
extra = []


def send(obj):
    with lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


TOOLS = [
    {"name": "add", "description": "Adds a and b.", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}},
    {
        "name": "stats",
        "description": "Length and upper case of a text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "outputSchema": {"type": "object", "properties": {"length": {"type": "integer"}, "upper": {"type": "string"}}, "required": ["length", "upper"]},
        "annotations": {"readOnlyHint": True},
    },
    {"name": "sleep", "description": "Sleeps ms milliseconds.", "inputSchema": {"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}},
    {"name": "grow", "description": "Adds a tool named `name`.", "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
    {"name": "fail", "description": "Fails.", "inputSchema": {"type": "object"}},
    {"name": "env", "description": "The names of the server's environment variables, sorted.", "inputSchema": {"type": "object"}},
]


def result(rid, res):
    send({"jsonrpc": "2.0", "id": rid, "result": res})


def call(rid, name, args):
    if name == "add":
        return result(rid, {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]})
    if name == "stats":
        s = {"length": len(args["text"]), "upper": args["text"].upper()}
        return result(rid, {"content": [{"type": "text", "text": json.dumps(s)}], "structuredContent": s})
    if name == "sleep":
        end = time.time() + args["ms"] / 1000
        while time.time() < end:
            if rid in cancelled:
                return
            time.sleep(0.005)
        return result(rid, {"content": [{"type": "text", "text": "slept"}]})
    if name == "env":
        return result(rid, {"content": [{"type": "text", "text": json.dumps(sorted(os.environ))}]})
    if name == "grow":
        extra.append({"name": args["name"], "description": "Grown at run time.", "inputSchema": {"type": "object"}})
        result(rid, {"content": [{"type": "text", "text": "grown"}]})
        return send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    if name == "fail":
        return result(rid, {"content": [{"type": "text", "text": "the server refused"}], "isError": True})
    if any(t["name"] == name for t in extra):
        return result(rid, {"content": [{"type": "text", "text": f"{name} says hi"}]})
    send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"unknown tool {name}"}})


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        method, rid = msg.get("method"), msg.get("id")
        if method == "initialize":
            version = msg["params"].get("protocolVersion", "2025-06-18")
            result(rid, {"protocolVersion": version, "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "test-mcp", "version": "0.1.0"}})
        elif method == "notifications/cancelled":
            cancelled.add(msg["params"].get("requestId"))
            if os.environ.get("CANCEL_LOG"):
                with open(os.environ["CANCEL_LOG"], "a") as f:
                    f.write(f"{msg['params'].get('requestId')}\n")
        elif method == "tools/list":
            result(rid, {"tools": TOOLS + extra})
        elif method == "tools/call":
            threading.Thread(target=call, args=(rid, msg["params"]["name"], msg["params"].get("arguments") or {}), daemon=True).start()
        elif method == "ping":
            result(rid, {})
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"unknown method {method}"}})


if __name__ == "__main__":
    main()
