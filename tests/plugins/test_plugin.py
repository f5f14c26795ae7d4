#!/usr/bin/env python3
"""A process plugin for codemode's tests: every behaviour a plugin can have, on demand.

Tools: echo, slow (waits `ms`, cancellable), structured (with an outputSchema),
bad-output (breaks its outputSchema), picture (an image), fail (isError), rpc-error
(a JSON-RPC error), crash (exits), hang (never answers), garbage (writes non-JSON),
flood (writes a huge line), add-tool / remove-tool (change the list, then notify).
Cancellations received are appended, one id per line, to $CANCEL_LOG when set.
"""
import json
import os
import sys
import threading
import time

lock = threading.Lock()
cancelled = set()
extra_tools = []


def send(obj):
    with lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def tool(name, description, properties=None, required=None, output=None):
    t = {"name": name, "description": description, "inputSchema": {"type": "object", "properties": properties or {}, "required": required or []}}
    if output:
        t["outputSchema"] = output
    return t


BASE = [
    tool("echo", "Returns its input as JSON text.", {"value": {}}),
    tool("slow", "Waits ms milliseconds.", {"ms": {"type": "integer", "minimum": 0}}, ["ms"]),
    tool("structured", "Returns {n}.", {"n": {"type": "integer"}}, ["n"], {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
    tool("bad-output", "Breaks its outputSchema.", output={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
    tool("picture", "Returns a text and an image."),
    tool("fail", "Fails with a message.", {"why": {"type": "string"}}),
    tool("rpc-error", "Answers with a JSON-RPC error."),
    tool("crash", "Exits the plugin."),
    tool("hang", "Never answers."),
    tool("garbage", "Writes a line that is not JSON."),
    tool("flood", "Writes a 20 MB line."),
    tool("context", "Returns the call's context.", output={"type": "object"}),
    tool("add-tool", "Adds a tool named `name` and announces the change.", {"name": {"type": "string"}}, ["name"]),
    tool("remove-tool", "Removes an added tool and announces the change.", {"name": {"type": "string"}}, ["name"]),
]


def text(t, error=False):
    r = {"content": [{"type": "text", "text": t}]}
    if error:
        r["isError"] = True
    return r


def handle_call(rid, name, args, context=None):
    if name == "context":
        return send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "ctx"}], "structuredContent": context}})
    if name == "echo":
        return send({"jsonrpc": "2.0", "id": rid, "result": text(json.dumps(args, separators=(",", ":")))})
    if name == "slow":
        deadline = time.time() + args["ms"] / 1000
        while time.time() < deadline:
            if rid in cancelled:
                return  # the host gave up; nobody reads an answer
            time.sleep(0.005)
        return send({"jsonrpc": "2.0", "id": rid, "result": text(f"slept {args['ms']}")})
    if name == "structured":
        return send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "x"}], "structuredContent": {"n": args["n"]}}})
    if name == "bad-output":
        return send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "x"}], "structuredContent": {"n": "one"}}})
    if name == "picture":
        return send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "a dot"}, {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]}})
    if name == "fail":
        return send({"jsonrpc": "2.0", "id": rid, "result": text(args.get("why", "it failed"), error=True)})
    if name == "rpc-error":
        return send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "the database is locked"}})
    if name == "crash":
        os._exit(3)
    if name == "hang":
        return
    if name == "garbage":
        with lock:
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
        return
    if name == "flood":
        with lock:
            sys.stdout.write("x" * (20 * 1024 * 1024) + "\n")
            sys.stdout.flush()
        return
    if name == "add-tool":
        extra_tools.append(tool(args["name"], "A tool added at run time."))
        send({"jsonrpc": "2.0", "id": rid, "result": text("added")})
        return send({"jsonrpc": "2.0", "method": "host/tools.changed"})
    if name == "remove-tool":
        extra_tools[:] = [t for t in extra_tools if t["name"] != args["name"]]
        send({"jsonrpc": "2.0", "id": rid, "result": text("removed")})
        return send({"jsonrpc": "2.0", "method": "host/tools.changed"})
    if any(t["name"] == name for t in extra_tools):
        return send({"jsonrpc": "2.0", "id": rid, "result": text(f"hello from {name}")})
    send({"jsonrpc": "2.0", "id": rid, "result": text(f"unknown tool {name}", error=True)})


def main():
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if method == "tool/cancel":
            cid = message["params"]["id"]
            cancelled.add(cid)
            if os.environ.get("CANCEL_LOG"):
                with open(os.environ["CANCEL_LOG"], "a") as f:
                    f.write(f"{cid}\n")
        elif method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {"name": "test-plugin"}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": BASE + extra_tools}})
        elif method == "tool/call":
            p = message["params"]
            threading.Thread(target=handle_call, args=(rid, p["name"], p["input"], p.get("context")), daemon=True).start()


if __name__ == "__main__":
    main()
