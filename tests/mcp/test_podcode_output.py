"""Podcode's (seed 004) output behaviours as an agent receives them through codemode's
MCP server, driven by the official MCP Python SDK:

- `truncation: "tail"` keeps the end of a 200 KB output and says how much was cut;
  the default, `"head"`, keeps its start;
- the document's own `ctx.recordChange` pattern after a write (with `ctx.ask` answered
  through elicitation) succeeds, and the change journal arrives with the `execute`
  result: one line per change in the content (what the agent reads), and the whole
  journal in the result's `_meta` under `codemode/changes`; changes a call recorded
  before it threw arrive too.

Run after scripts/npm-fixtures.sh installed the fixtures:

    python tests/mcp/test_podcode_output.py path/to/codemode
"""

import os
import tempfile

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import harness
from harness import CODEMODE, ROOT, check

FORMATS = os.path.join(ROOT, "target/formats")


def config_file():
    folder = tempfile.mkdtemp(prefix="codemode-podcode-test-")
    path = os.path.join(folder, "codemode.toml")
    with open(path, "w") as f:
        f.write(f"""[[plugin]]
name = "notes"
kind = "javascript"
path = "{FORMATS}/podcode/notes.mjs"
""")
    return path


def build_log(kb):
    """notes.mjs's build log: 64-byte numbered lines."""
    return "".join(f"line {i:06} ".ljust(63, ".") + "\n" for i in range(kb * 1024 // 64))


def texts(result):
    return [c.text for c in result.content if c.type == "text"]


async def main():
    asked = []

    async def on_elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept")

    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config_file()])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=on_elicit) as session:
            await session.initialize()
            log = build_log(200)

            result = await session.call_tool("execute", {"code": "return await tools.notes.build_log({ kb: 200 })"})
            marker = '[output cut: the first 153600 of 204800 bytes were left out; this tool keeps the end of an oversized output (truncation "tail")]\n'
            check(not result.is_error and texts(result) == [marker + log[-51200:]], f"tail: {[t[:200] for t in texts(result)]}")

            result = await session.call_tool("execute", {"code": "return await tools.notes.build_log_head({ kb: 200 })"})
            marker = '\n[output cut: the last 153600 of 204800 bytes were left out; this tool keeps the start of an oversized output (truncation "head")]'
            check(not result.is_error and texts(result) == [log[:51200] + marker], f"head: {[t[-200:] for t in texts(result)]}")

            code = """const a = await tools.notes.write_note({ path: "notes/today.md", body: "first" });
const b = await tools.notes.write_note({ path: "notes/today.md", body: "second" });
return [a, b]"""
            result = await session.call_tool("execute", {"code": code})
            check(not result.is_error, f"the writes succeed: {texts(result)}")
            check(
                texts(result)
                == [
                    '["Wrote 5 bytes to notes/today.md.","Wrote 6 bytes to notes/today.md."]',
                    "Changes recorded by tools (2):\n- create notes/today.md (tools.notes.write_note)\n- modify notes/today.md (tools.notes.write_note)",
                ],
                f"the journal in the content: {texts(result)}",
            )
            check(
                (result.meta or {}).get("codemode/changes")
                == [
                    {"call": "tools.notes.write_note", "file": "notes/today.md", "op": "create", "oldContent": None, "newContent": "first"},
                    {"call": "tools.notes.write_note", "file": "notes/today.md", "op": "modify", "oldContent": "first", "newContent": "second"},
                ],
                f"the journal in _meta: {result.meta}",
            )
            check(len([m for m in asked if 'the "write" permission for notes/today.md' in m]) == 2, f"ctx.ask reached the person: {asked}")

            # Changes recorded before a call throws are still reported with its failure.
            code = """try { await tools.notes.rewrite({ name: "failing/", bytes: 3, count: 2, fail: true }) } catch (e) { return e.message }"""
            result = await session.call_tool("execute", {"code": code})
            check(
                texts(result)
                == [
                    "the index could not be updated after writing 2 files",
                    "Changes recorded by tools (2):\n- create failing/0 (tools.notes.rewrite)\n- create failing/1 (tools.notes.rewrite)",
                ],
                f"a failed call's journal in the content: {texts(result)}",
            )
            check(
                [c["file"] for c in (result.meta or {}).get("codemode/changes", [])] == ["failing/0", "failing/1"],
                f"a failed call's journal in _meta: {result.meta}",
            )

            # A program whose calls change nothing carries no journal.
            result = await session.call_tool("execute", {"code": "return 1"})
            check(texts(result) == ["1"] and "codemode/changes" not in (result.meta or {}), f"no journal: {result}")
    print(f"podcode output over MCP: {harness.CHECKS} checks passed")


if __name__ == "__main__":
    anyio.run(main)
