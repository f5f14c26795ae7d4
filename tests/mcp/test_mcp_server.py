"""codemode's MCP server driven by the official MCP Python SDK, as an agent host would.

Run by scripts/test-mcp-server.sh (which installs the SDK from PyPI into a virtualenv):

    python tests/mcp/test_mcp_server.py path/to/codemode

Over stdio (`codemode mcp`): initialize and instructions, the generated declarations, a
Promise.all program with progress, a failing program, a limit, the output cap, a
cancellation that reaches the plugin, approvals answered through elicitation, and
notifications/tools/list_changed. Then separate tools mode, and streamable HTTP
(`codemode serve`) with its bearer token. Every check names what it expected.
"""

import json
import os
import re
import subprocess
import tempfile

import anyio
import httpx2
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

import harness
from harness import CODEMODE, ROOT, check



def write_config(text):
    """`text` as codemode.toml in a new temporary folder; returns its path."""
    path = os.path.join(tempfile.mkdtemp(prefix="codemode-mcp-test-"), "codemode.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def config_file():
    return write_config(f"""example_tools = true

[limits]
cpu_step_ms = 1000

[server]
output_bytes = 2048
max_concurrent_programs = 4

[[plugin]]
name = "hello"
kind = "javascript"
path = "{ROOT}/plugins/hello-tools"

[[plugin]]
name = "js"
kind = "javascript"
path = "{ROOT}/tests/plugins/js-test"
require_approval = ["text"]
""")


def text_of(result):
    return [c.text for c in result.content if c.type == "text"]


async def execute(session, code, **kwargs):
    return await session.call_tool("execute", {"code": code}, **kwargs)


async def code_mode(config):
    list_changed = anyio.Event()
    approvals = []

    async def on_message(message):
        if isinstance(message, types.ServerNotification) and isinstance(getattr(message, "root", message), types.ToolListChangedNotification):
            list_changed.set()
        elif isinstance(message, types.ToolListChangedNotification):
            list_changed.set()

    async def on_elicit(context, params):
        approvals.append(params.message)
        return types.ElicitResult(action="accept" if '"yes"' in params.message else "decline")

    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=on_message, elicitation_callback=on_elicit) as session:
            init = await session.initialize()
            check(init.server_info.name == "codemode", f"server name: {init.server_info.name}")
            check(init.capabilities.tools is not None and init.capabilities.tools.list_changed, "tools.listChanged capability")
            rules = open(os.path.join(ROOT, "plugins/hello-tools/rules.md")).read().strip()
            check(f"## hello\n\n{rules}" in init.instructions, f"instructions carry hello's rules: {init.instructions!r}")

            listed = await session.list_tools()
            check([t.name for t in listed.tools] == ["execute"], f"code mode lists one tool: {[t.name for t in listed.tools]}")
            description = listed.tools[0].description
            for needle in ["interface Tools", "greet(input: {", "\"word-count\"(input: {", "wait_for_abort(input?:", "Limits: 256 MiB of memory; 1 s of JavaScript", "A result longer than 2 KiB is cut"]:
                check(needle in description, f"the execute description contains {needle!r}")

            progress = []

            async def on_progress(value, total, message):
                progress.append((value, message))

            result = await execute(
                session,
                'const r = await Promise.all([tools.math.add({ a: 1, b: 2 }), tools.hello.greet({ name: "Ann" }), tools.js.typed({ count: 4 })]); console.log("done"); return r',
                progress_callback=on_progress,
            )
            check(not result.is_error, f"Promise.all program: {result}")
            check(text_of(result) == ['["3","Hello, Ann!","8"]', "Console output:\ndone"], f"Promise.all result: {text_of(result)}")
            with anyio.fail_after(5):
                while len(progress) < 3:
                    await anyio.sleep(0.02)
            check(sorted(v for v, _ in progress) == [1.0, 2.0, 3.0], f"one progress notification per finished call: {progress}")
            check(any(m == "tools.hello.greet answered" for _, m in progress), f"progress names the call: {progress}")

            # Images go back to the agent as images, not as base64 in JSON text.
            result = await execute(session, "return await tools.js.image()")
            kinds = [(c.type, getattr(c, "text", None) or getattr(c, "data", None)) for c in result.content]
            check(kinds == [("text", "a pixel"), ("image", "iVBORw0KGgo=")], f"a returned content list comes back as content: {kinds}")
            check(result.content[1].mime_type == "image/png", f"the image keeps its type: {result.content[1]}")
            result = await execute(session, 'const [, shot] = await tools.js.image(); return { title: "home", shot }')
            check(text_of(result) == ['{"title":"home","shot":"[image 1: image/png, 12 bytes, attached]"}'], f"an image inside a value is a placeholder: {text_of(result)}")
            check([c.type for c in result.content] == ["text", "image"], f"and an image of its own: {[c.type for c in result.content]}")
            result = await execute(session, 'return { type: "image", mimeType: "image/png", data: "A".repeat(5000) }')
            check([c.type for c in result.content] == ["text"] and "left out, more than the 2 KiB output cap allows" in text_of(result)[0], f"an image over the cap is a note, never cut: {text_of(result)}")

            result = await execute(session, 'const x = 1;\nthrow new TypeError("boom")')
            check(result.is_error, "a throwing program is an error result")
            check(text_of(result)[0].startswith("Error: the program threw TypeError: boom (line 2, column 7)"), f"error text: {text_of(result)}")

            result = await execute(session, "while (true) {}")
            check(result.is_error and text_of(result)[0].startswith("CPU limit: the program ran JavaScript for more than 1 s"), f"limit: {text_of(result)}")

            result = await execute(session, 'return Array.from({ length: 2000 }, (_, i) => ({ i, name: "item " + i }))')
            out = text_of(result)[0]
            check(len(out.encode()) <= 2048, f"the output cap holds: {len(out)} bytes")
            check(isinstance(json.loads(out), list) and "output cap is 2048 bytes" in out, f"cut output stays valid JSON with a marker: {out[-120:]}")

            # Cancellation: the client gives up; the worker dies and the plugin's call is aborted.
            with anyio.move_on_after(1.5):
                await execute(session, "return await tools.js.wait_for_abort()")
            aborted = []
            with anyio.fail_after(10):
                while not aborted:
                    aborted = json.loads(text_of(await execute(session, "return await tools.js.aborted()"))[0])
                    await anyio.sleep(0.05)
            check(aborted[0].startswith("AbortError: the call was given up"), f"the cancelled program's call was aborted at the plugin: {aborted}")

            result = await execute(session, 'const a = await tools.js.text({ text: "yes" }); let b; try { await tools.js.text({ text: "no" }) } catch (e) { b = e.message } return { a, b }')
            check(json.loads(text_of(result)[0]) == {"a": "yes", "b": "the person declined the call to tools.js.text"}, f"approvals: {text_of(result)}")
            check(len(approvals) == 2 and "Allow the tool text of plugin js" in approvals[0], f"elicitation messages: {approvals}")

            result = await execute(session, 'return await tools.js.add_tool({ name: "late_tool" })')
            check(text_of(result) == ["added"], f"add_tool: {text_of(result)}")
            with anyio.fail_after(10):
                await list_changed.wait()
            listed = await session.list_tools()
            check("late_tool(input?:" in listed.tools[0].description, "the next description declares the new tool")


async def separate_tools(config):
    """Seed 000's names: each tool under its own name (`<plugin>_<tool>` only where two
    plugins share one)."""
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config, "--mode", "tools"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check("each as a tool of its own under its own name" in init.instructions, "separate mode instructions")
            names = [t.name for t in (await session.list_tools()).tools]
            for name in ["greet", "word-count", "add", "typed", "forecast"]:
                check(name in names, f"separate tool {name} in {names}")
            check(not any("__" in n for n in names), f"no prefixed names by default: {names}")
            tools = {t.name: t for t in (await session.list_tools()).tools}
            check(tools["word-count"].output_schema["required"] == ["words", "lines", "top"], "separate tools keep their outputSchema")
            check(tools["greet"].annotations.read_only_hint is True, "separate tools keep their annotations")
            result = await session.call_tool("greet", {"name": "Bo"})
            check(text_of(result) == ["Hello, Bo!"], f"greet: {text_of(result)}")
            result = await session.call_tool("word-count", {"text": "a a b"})
            check(result.structured_content == {"words": 3, "lines": 1, "top": [{"word": "a", "count": 2}, {"word": "b", "count": 1}, ]}, f"structured content: {result.structured_content}")
            result = await session.call_tool("typed", {"count": "x"})
            check(result.is_error and text_of(result)[0] == 'invalid input for js.typed: input.count: "x" is not of type "integer"', f"validation: {text_of(result)}")
            result = await session.call_tool("text", {"text": "hi"})
            check(result.is_error and "cannot ask (it does not support elicitation)" in text_of(result)[0], f"no elicitation: {text_of(result)}")
    # Two plugins with a tool of the same name: both get their plugin's name in front.
    shared = config.replace(".toml", "-shared.toml")
    with open(config) as f, open(shared, "w") as out:
        out.write(f.read().replace("[server]", '[server]\nmode = "tools"') + f'\n[[plugin]]\nname = "hello2"\nkind = "javascript"\npath = "{ROOT}/plugins/hello-tools"\n')
    async with stdio_client(StdioServerParameters(command=CODEMODE, args=["mcp", "--config", shared])) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            check("hello_greet" in names and "hello2_greet" in names and "greet" not in names, f"shared names are prefixed: {names}")
            result = await session.call_tool("hello2_greet", {"name": "Cy"})
            check(text_of(result) == ["Hello, Cy!"], f"hello2_greet: {text_of(result)}")
    # Seed 003's names, as a setting.
    prefixed = config.replace(".toml", "-prefixed.toml")
    with open(config) as f, open(prefixed, "w") as out:
        out.write(f.read().replace("[server]", '[server]\nmode = "tools"\ntool_names = "prefixed"'))
    async with stdio_client(StdioServerParameters(command=CODEMODE, args=["mcp", "--config", prefixed])) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check("`<plugin>__<tool>`" in init.instructions, "prefixed mode instructions")
            names = [t.name for t in (await session.list_tools()).tools]
            for name in ["hello__greet", "hello__word-count", "math__add", "js__typed", "weather__forecast"]:
                check(name in names, f"prefixed tool {name} in {names}")
            result = await session.call_tool("hello__greet", {"name": "Bo"})
            check(text_of(result) == ["Hello, Bo!"], f"hello__greet: {text_of(result)}")


async def over_http(config):
    env = dict(os.environ, CODEMODE_TOKEN="s3cret")
    server = subprocess.Popen([CODEMODE, "serve", "--config", config, "--listen", "127.0.0.1:0"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for line in server.stderr:
            found = re.search(r"serving MCP on (http://\S+)", line)
            if found:
                url = found.group(1)
                break
        check(url is not None, "codemode serve printed its address")
        async with httpx2.AsyncClient() as plain:
            response = await plain.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            check(response.status_code == 401, f"no token: HTTP {response.status_code}")
        async with httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"}, timeout=30) as client:
            async with streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    check(init.server_info.name == "codemode", "HTTP initialize")
                    check([t.name for t in (await session.list_tools()).tools] == ["execute"], "HTTP list_tools")
                    result = await execute(session, "return await Promise.all([1, 2, 3].map((i) => tools.math.add({ a: i, b: i })))")
                    check(text_of(result) == ['["2","4","6"]'], f"HTTP Promise.all: {text_of(result)}")
    finally:
        server.terminate()
        server.wait(timeout=10)


async def large_catalog():
    """Past `catalog_budget`, the description lists plugins and programs search."""
    config = write_config(f"""example_tools = true

[server]
catalog_budget = 600

[[plugin]]
name = "hello"
kind = "javascript"
path = "{ROOT}/plugins/hello-tools"
summary = "Greetings and word counts."
""")
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            description = (await session.list_tools()).tools[0].description
            check("interface Tools" not in description, "past the budget nothing is declared in full")
            check("too many to declare here" in description and 'tools.$search("what the tool should do")' in description, "the description says how to search")
            check(re.search(r"- tools\.hello \(\d+ tools\): Greetings and word counts\. — .*greet", description), f"plugins are listed with their summary and tool names: {description[-400:]}")
            result = await execute(session, 'const [hit] = await tools.$search("say hello to someone by name", { limit: 1 }); return { call: hit.call, declaration: hit.declaration, answer: await tools[hit.plugin][hit.tool]({ name: "Ann" }) }')
            found = json.loads(text_of(result)[0])
            check(found["call"] == "tools.hello.greet" and "tools.hello.greet(input: {" in found["declaration"], f"search finds the tool with its declaration: {found}")
            check(found["answer"] == "Hello, Ann!", f"and the program calls what it found: {found}")
            result = await execute(session, 'tools.math.add({ a: "x" }); return "sent"')
            check(not result.is_error and text_of(result)[0] == "sent", f"a program that returns first still returns: {text_of(result)}")
            check(len(text_of(result)) == 2 and text_of(result)[1].startswith("[1 tool call was never awaited: the program returned while it was running; 1 failed: tools.math.add: invalid input for math.add"), f"the call never awaited is named: {text_of(result)}")


async def caller_context(config):
    """Tool calls learn who calls from MCP: the client's name, its first root, and the
    chat when a request names it; nothing is made up when the client says nothing."""

    async def on_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/agent%20work", name="work")])

    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config])
    async with stdio_client(params) as (read, write):
        agent = types.Implementation(name="test-agent", version="1.2")
        async with ClientSession(read, write, list_roots_callback=on_roots, client_info=agent) as session:
            await session.initialize()
            await anyio.sleep(0.3)  # codemode reads the roots after `initialized`
            program = "const r = await tools.js.echo({}); return (typeof r === 'string' ? JSON.parse(r) : r).context"
            context = json.loads(text_of(await session.call_tool("execute", {"code": program}, meta={"chatId": "chat-7"}))[0])
            check(context["agentId"] == "test-agent" and context["workspace"] == "/tmp/agent work" and context["chatId"] == "chat-7", f"context from MCP: {context}")
            context = json.loads(text_of(await execute(session, program))[0])
            check("chatId" not in context and context["agentId"] == "test-agent", f"no chat unless the request names one: {context}")
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            context = json.loads(text_of(await execute(session, "const r = await tools.js.echo({}); return (typeof r === 'string' ? JSON.parse(r) : r).context"))[0])
            check("workspace" not in context and "chatId" not in context, f"a client without roots gives no workspace: {context}")


async def main():
    config = config_file()
    await caller_context(config)
    await large_catalog()
    await code_mode(config)
    await separate_tools(config)
    await over_http(config)
    print(f"MCP server test: {harness.CHECKS} checks passed")


if __name__ == "__main__":
    anyio.run(main)
