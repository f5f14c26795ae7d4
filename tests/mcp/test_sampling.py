"""A plugin's model calls answered by the MCP client's model (sampling), with the official
MCP Python SDK as the client and its `sampling_callback` as the model.

Run by scripts/test-mcp-server.sh:

    python tests/mcp/test_sampling.py path/to/codemode

The plugins are tests/plugins/model-calls: a seed-003 script calling `host.llm`,
`host.decide` and `host.session.llm`, and a seed-000 plugin calling `api.models.prompt`
(and the document's own `run_command`, whose `api.host.kernel` cannot exist here).

- 2025-11-25 (`codemode mcp`, a session): each call reaches the callback as
  `sampling/createMessage` with the plugin's messages, system prompt and token bound,
  and the callback's exact text reaches the plugin and the program;
- a client without the sampling capability: the plugin's call fails saying so;
- 2026-07-28 (`codemode mcp` with a pinned client, and `codemode serve` request by
  request): the request arrives as "input required" (`sampling/createMessage` in
  `inputRequests`), and the answer the client brings back reaches the plugin;
- a plugin that is itself an MCP server (tests/plugins/mcp2026_py_server.py, a
  resolver returning `Sample`) asks for a completion: the request is passed on to the
  agent's client and its model's answer goes back to the server.
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import warnings

import anyio
import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

import harness
from harness import CODEMODE, ROOT, check
from test_mcp_2026 import META, call, free_port, serve

warnings.simplefilter("ignore")

PLUGINS = os.path.join(ROOT, "tests/plugins/model-calls")


def config(extra=""):
    folder = tempfile.mkdtemp(prefix="codemode-sampling-")
    path = os.path.join(folder, "codemode.toml")
    with open(path, "w") as f:
        f.write(f"""{extra}
[[plugin]]
name = "model"
kind = "javascript"
path = "{PLUGINS}/globals"

[[plugin]]
name = "models"
kind = "javascript"
path = "{PLUGINS}/manifest"
""")
    return path


class Model:
    """A sampling callback: records what it was asked, answers with the next text."""

    def __init__(self, *answers):
        self.answers, self.asked = list(answers), []

    async def __call__(self, context, params):
        asked = params.model_dump(by_alias=True, exclude_none=True, mode="json")
        # rmcp numbers its requests' progress in `_meta`: not the plugin's.
        asked.pop("_meta", None)
        self.asked.append(asked)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=self.answers.pop(0)),
            model="test-model-1",
            stop_reason="endTurn",
        )


def value(result):
    check(not result.is_error, f"the program succeeded: {result}")
    text = result.content[0].text
    return json.loads(text)


def user(text):
    return {"role": "user", "content": {"type": "text", "text": text}}


def assistant(text):
    return {"role": "assistant", "content": {"type": "text", "text": text}}


async def in_a_session(path, mode):
    """`sampling/createMessage` to a client with the sampling capability."""
    model = Model(
        "The meeting moved to Friday.",
        "urgent",
        "Sure, Friday works.",
        "Paris.",
    )
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", path])
    async with Client(params, mode=mode, sampling_callback=model) as client:
        text = "The weekly meeting, planned for Thursday, moves to Friday because the room is taken."
        got = value(await client.call_tool("execute", {"code": f"return await tools.model.summarize({{ text: {json.dumps(text)} }})"}))
        check(got == {"summary": "The meeting moved to Friday.", "model": "test-model-1", "stopReason": "endTurn"}, f"{mode}: host.llm's answer is the client's: {got}")
        check(model.asked[0] == {"messages": [user(text)], "systemPrompt": "Summarize in one sentence.", "maxTokens": 60}, f"{mode}: the client was asked with the plugin's messages, system prompt and token bound: {model.asked[0]}")

        got = value(await client.call_tool("execute", {"code": "return await tools.model.triage({ message: 'The server is down' })"}))
        check(got == {"choice": "urgent"}, f"{mode}: host.decide chose the client's answer: {got}")
        check(model.asked[1] == {
            "messages": [user("Is this message urgent? The server is down")],
            "systemPrompt": "Choose exactly one of these options and answer with that option alone, word for word: urgent | later",
            "maxTokens": 256,
        }, f"{mode}: host.decide's request: {model.asked[1]}")

        got = value(await client.call_tool("execute", {"code": "return [await tools.model.reply({ message: 'Can we meet on Friday?' })]"}))
        check(got == ["Sure, Friday works."], f"{mode}: host.session.llm's answer: {got}")
        check(model.asked[2] == {
            "messages": [user("Hello"), assistant("Hi, how can I help?"), user("Can we meet on Friday?")],
            "maxTokens": 1024,
        }, f"{mode}: host.session.llm's conversation, with the default token bound: {model.asked[2]}")

        got = value(await client.call_tool("execute", {"code": "return await tools.models.ask({ question: 'Capital of France?' })"}))
        check(got == {"text": "Paris.", "model": "test-model-1"}, f"{mode}: api.models.prompt's answer: {got}")
        check(model.asked[3] == {
            "messages": [user("Capital of France?")],
            "modelPreferences": {"hints": [{"name": "gpt-5.5"}]},
            "maxTokens": 100,
        }, f"{mode}: api.models.prompt's request, its model as a hint: {model.asked[3]}")
        check(model.answers == [], f"{mode}: every answer was used")


class Echo:
    """A sampling callback that answers each request with its own last message: the
    answer says which request it answers, in whatever order the requests come."""

    def __init__(self):
        self.asked = []

    async def __call__(self, context, params):
        said = params.messages[-1].content.text
        self.asked.append(said)
        await anyio.sleep(0.2)  # the requests overlap
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=f"re: {said}"), model="echo", stop_reason="endTurn")


async def together(path, mode):
    """Calls a program makes together each ask the model for themselves."""
    model = Echo()
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", path])
    async with Client(params, mode=mode, sampling_callback=model) as client:
        got = value(await client.call_tool("execute", {"code": "return await Promise.all([0, 1, 2].map((i) => tools.model.summarize({ text: `probe ${i}` })))"}))
        got = [json.loads(g) if isinstance(g, str) else g for g in got]
        check([g["summary"] for g in got] == ["re: probe 0", "re: probe 1", "re: probe 2"], f"{mode}: three host.llm calls together, three answers, each its own: {got}")
        got = value(await client.call_tool("execute", {"code": "return await Promise.all(['a', 'b', 'c'].map((q) => tools.models.ask({ question: q })))"}))
        got = [json.loads(g) if isinstance(g, str) else g for g in got]
        check([g["text"] for g in got] == ["re: a", "re: b", "re: c"], f"{mode}: three api.models.prompt calls together: {got}")
        check(sorted(model.asked) == ["a", "b", "c", "probe 0", "probe 1", "probe 2"], f"{mode}: one sampling request per call: {model.asked}")


async def bounded(path, mode):
    """A program asking 12 questions at once: 8 wait for the model, 4 are refused at once."""
    model = Echo()
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", path])
    program = """const asked = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => tools.models.ask({ question: `q${i} ` + "x".repeat(65536) })));
        return { answered: asked.filter((a) => a.status === "fulfilled").length, refused: [...new Set(asked.filter((a) => a.status === "rejected").map((a) => a.reason.message))] };"""
    async with Client(params, mode=mode, sampling_callback=model) as client:
        got = value(await client.call_tool("execute", {"code": program}))
        check(got == {"answered": 8, "refused": ["api.models.prompt: this program has 8 questions waiting for the client's model already, the most one program may; await the model's answers before asking more (the bounds are in docs/limits.md)"]},
              f"{mode}: past 8 questions waiting, a program's questions are refused: {got}")
        check(len(model.asked) == 8, f"{mode}: the client was asked 8 times: {len(model.asked)}")
        # The bound is of questions waiting: once answered, the next ones are asked.
        got = value(await client.call_tool("execute", {"code": "const a = await tools.models.ask({ question: 'after' }); return { text: (typeof a === 'string' ? JSON.parse(a) : a).text }"}))
        check(got == {"text": "re: after"}, f"{mode}: a question after the others were answered is asked: {got}")


async def without_sampling(path):
    """A client that does not offer sampling: the plugin's call fails naming it."""
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", path])
    async with Client(params, mode="legacy") as client:
        result = await client.call_tool("execute", {"code": "try { await tools.model.summarize({ text: 'x' }); return null } catch (e) { return e.message }"})
        got = result.content[0].text
        check(got == "this MCP client does not support sampling (sampling/createMessage), which host.llm needs: codemode has no model of its own and asks the model of the client that runs the program; use a client that offers sampling", f"the error names sampling and host.llm: {got}")
        result = await client.call_tool("execute", {"code": "try { await tools.models.ask({ question: 'x' }); return null } catch (e) { return e.message }"})
        got = result.content[0].text
        check(got == "this MCP client does not support sampling (sampling/createMessage), which api.models.prompt needs: codemode has no model of its own and asks the model of the client that runs the program; use a client that offers sampling", f"the error names api.models.prompt: {got}")


def rounds_by_hand(path):
    """2026-07-28 over HTTP, request by request: the sampling request is input required."""
    port = free_port()
    server = serve(path, port)
    url = f"http://127.0.0.1:{port}/mcp"
    meta = {"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}
    try:
        program = {"code": "return await tools.model.summarize({ text: 'Rain all week, sun on Sunday.' })"}
        first = call(url, program, meta=meta)["result"]
        check(first.get("resultType") == "input_required", f"the round asks: {first}")
        (key, request), = first["inputRequests"].items()
        check(request == {"method": "sampling/createMessage", "params": {"messages": [user("Rain all week, sun on Sunday.")], "systemPrompt": "Summarize in one sentence.", "maxTokens": 60}}, f"a sampling request with the plugin's messages: {request}")
        answer = {"role": "assistant", "content": {"type": "text", "text": "Wet week, sunny Sunday."}, "model": "raw-model", "stopReason": "endTurn"}
        done = call(url, program, state=first["requestState"], responses={key: answer}, meta=meta)["result"]
        got = json.loads(done["content"][0]["text"])
        check(got == {"summary": "Wet week, sunny Sunday.", "model": "raw-model", "stopReason": "endTurn"}, f"the answer reached the plugin: {got}")
        # A 2026-07-28 client that did not declare sampling is not asked.
        refused = call(url, {"code": "try { await tools.model.summarize({ text: 'x' }); return null } catch (e) { return e.message }"})["result"]
        check(refused["content"][0]["text"] == "this MCP client does not support sampling (sampling/createMessage), which host.llm needs: codemode has no model of its own and asks the model of the client that runs the program; use a client that offers sampling", f"without the capability in _meta: {refused}")
    finally:
        server.kill()
        server.wait()


async def a_plugin_server_asks(mode):
    """A plugin's own MCP server asks for a completion: it reaches the agent's model."""
    port = free_port()
    server = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests/plugins/mcp2026_py_server.py"), str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        path = config(f'[[plugin]]\nname = "py"\nkind = "mcp"\nurl = "http://127.0.0.1:{port}/mcp"\n')
        model = Model("Leaves drift, cold light falls")
        params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", path])
        async with Client(params, mode=mode, sampling_callback=model) as client:
            result = await client.call_tool("execute", {"code": "return await tools.py.haiku({ topic: 'autumn' })"})
            check([c.text for c in result.content] == ["test-model-1: Leaves drift, cold light falls"], f"{mode}: the server's sampling answered by the agent's model: {result}")
            check(model.asked == [{"messages": [user("A haiku about autumn")], "systemPrompt": "You write haiku.", "maxTokens": 40}], f"{mode}: the server's request as the agent's client received it: {model.asked}")
    finally:
        server.kill()
        server.wait()


async def main():
    path = config()
    await in_a_session(path, "legacy")
    await together(path, "legacy")
    await together(path, "2026-07-28")
    await bounded(path, "legacy")
    await bounded(path, "2026-07-28")
    await without_sampling(path)
    await in_a_session(path, "2026-07-28")
    rounds_by_hand(path)
    await a_plugin_server_asks("legacy")
    await a_plugin_server_asks("2026-07-28")


if __name__ == "__main__":
    anyio.run(main)
    print(f"sampling: {harness.CHECKS} checks passed")
