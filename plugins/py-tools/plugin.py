#!/usr/bin/env python3
"""py-tools: a process plugin in Python, standard library only.

Speaks codemode's plugin protocol (protocol/PLUGINS.md): JSON-RPC 2.0, one message per
line on stdin/stdout. Two tools: `word-count` (structured output) and `slugify` (text).
"""
import json
import re
import sys

TOOLS = [
    {
        "name": "word-count",
        "description": "Counts the words, lines and characters of a text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string", "description": "The text to count"}}, "required": ["text"]},
        "outputSchema": {
            "type": "object",
            "properties": {"words": {"type": "integer"}, "lines": {"type": "integer"}, "characters": {"type": "integer"}},
            "required": ["words", "lines", "characters"],
        },
        "annotations": {"readOnlyHint": True, "idempotentHint": True},
    },
    {
        "name": "slugify",
        "description": "Turns a title into a URL slug (lowercase, dashes).",
        "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
        "annotations": {"readOnlyHint": True},
    },
]


def call(name, args):
    if name == "word-count":
        text = args["text"]
        counts = {"words": len(text.split()), "lines": len(text.splitlines()), "characters": len(text)}
        return {"content": [{"type": "text", "text": json.dumps(counts)}], "structuredContent": counts}
    if name == "slugify":
        slug = re.sub(r"[^a-z0-9]+", "-", args["title"].lower()).strip("-")
        return {"content": [{"type": "text", "text": slug}]}
    return {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}


def main():
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue  # notifications (tool/cancel): nothing to stop, every call is instant
        if method == "initialize":
            result = {"name": "py-tools", "version": "0.1.0"}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tool/call":
            result = call(message["params"]["name"], message["params"]["input"])
        else:
            print(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"unknown method {method}"}}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}), flush=True)


if __name__ == "__main__":
    main()
