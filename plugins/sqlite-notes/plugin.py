#!/usr/bin/env python3
"""sqlite-notes: a process plugin backed by a real SQLite database (Python's sqlite3).

Tools: `add-note` and `query` (read-only SQL, results as structured rows with an
outputSchema). The database file is NOTES_DB (default: notes.sqlite next to this file);
it is created and seeded on first start.
"""
import json
import os
import sqlite3
import sys

DB = os.environ.get("NOTES_DB") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "notes.sqlite")

TOOLS = [
    {
        "name": "query",
        "description": "Runs one read-only SQL query (SELECT) on the notes database: table notes(id, title, body, tag, created).",
        "inputSchema": {
            "type": "object",
            "properties": {"sql": {"type": "string", "description": "A SELECT statement"}, "params": {"type": "array", "description": "Values for ? placeholders"}},
            "required": ["sql"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"columns": {"type": "array", "items": {"type": "string"}}, "rows": {"type": "array", "items": {"type": "array"}}},
            "required": ["columns", "rows"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "add-note",
        "description": "Adds a note and returns its id.",
        "inputSchema": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "body": {"type": "string"}, "tag": {"type": "string"}},
            "required": ["title", "body"],
        },
        "annotations": {"destructiveHint": False},
    },
]


def connect():
    db = sqlite3.connect(DB)
    db.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL, tag TEXT, created TEXT DEFAULT CURRENT_TIMESTAMP)")
    if db.execute("SELECT COUNT(*) FROM notes").fetchone()[0] == 0:
        db.executemany(
            "INSERT INTO notes (title, body, tag) VALUES (?, ?, ?)",
            [("Ship the sandbox", "Landlock, seccomp, namespaces", "work"), ("Buy coffee", "Two bags", "home"), ("Read the MCP spec", "tools, elicitation", "work")],
        )
        db.commit()
    return db


def text(t, error=False):
    result = {"content": [{"type": "text", "text": t}]}
    if error:
        result["isError"] = True
    return result


def call(db, name, args):
    if name == "query":
        sql = args["sql"].strip()
        if not sql.lower().startswith(("select", "with")):
            return text("query runs SELECT statements only; use add-note to write", error=True)
        try:
            cur = db.execute(sql, args.get("params") or [])
        except sqlite3.Error as e:
            return text(f"SQL error: {e}", error=True)
        columns = [c[0] for c in cur.description or []]
        rows = [list(r) for r in cur.fetchmany(1000)]
        structured = {"columns": columns, "rows": rows}
        return {"content": [{"type": "text", "text": json.dumps(structured)}], "structuredContent": structured}
    if name == "add-note":
        cur = db.execute("INSERT INTO notes (title, body, tag) VALUES (?, ?, ?)", (args["title"], args["body"], args.get("tag")))
        db.commit()
        return text(str(cur.lastrowid))
    return text(f"unknown tool {name}", error=True)


def main():
    db = connect()
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue
        if method == "initialize":
            result = {"name": "sqlite-notes", "version": "0.1.0"}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tool/call":
            result = call(db, message["params"]["name"], message["params"]["input"])
        else:
            print(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"unknown method {method}"}}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}), flush=True)


if __name__ == "__main__":
    main()
