"""Each tool call's identity, its subagents' lifetime, and what the agent sees while a
tool works, through `codemode mcp` driven by the official MCP Python SDK (seed
plugins loaded unchanged: seed 000's subagent example, plico's tool files, Podcode's
deploy-status tool reporting with ctx.metadata).

Run by scripts/test.sh after scripts/npm-fixtures.sh installed the fixtures:

    python tests/mcp/test_plugin_ids.py path/to/codemode

- two calls in one `execute` get different callIds (`<request id>:<call number>`, the
  request id being the client's JSON-RPC id and a part unique to the request) and
  plico idempotency keys; a second `execute` gets others, and so does another session's
  `execute` with the same JSON-RPC id; a tool called directly (separate-tools mode) gets
  the request's id;
- `ctx.context` (plico) carries the request's `_meta["codemode/context"]`, and is
  undefined without it; `workspaceId`, `chatId`, Podcode's `sessionID`, `messageID` and
  `agent` come from `_meta` and the client's name;
- seed 000's subagent rows (step, tool rows, text, usage, end) and Podcode's
  `ctx.metadata` arrive as progress notifications of the request, in order, and
  `sub.shown` is true exactly when the client gave a progress token;
- a subagent the tool never ends ends with the call, which answers at once (not at the
  plugin's 30 s timeout), and is reported ended;
- a 2026-07-28 client (no session): a program paused for an approval (an input-required
  round) and resumed by a new request keeps its calls traceable to the request that
  started it, so the keys of its calls before and after the round share that id.
"""

import http.server
import json
import os
import re
import tempfile
import threading
import time

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.client import Client
from mcp.client.stdio import stdio_client

import harness
from harness import CODEMODE, ROOT, check

FORMATS = os.path.join(ROOT, "target/formats")
CLIENT = types.Implementation(name="ids-test", version="1.0.0")

MANIFEST = '{ "name": "m", "version": "1.0.0", "main": "main.ts", "permissions": { "tools.provide": { "reason": "research tools" } } }'

# Seed 000's Subagents example as its document writes it (`research`), the same left
# running (`research_left_running`: no `sub.end(...)`), and a tool answering its ctx.
MAIN = """
export function activate(api: any) {
  api.tools.register({
    name: "research",
    description: "Researches a question as a subagent the user watches.",
    inputSchema: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
    async run({ question }: { question: string }, ctx: any) {
      const sub = await ctx.subagent.start({ title: "Research", agent: "codex", model: "gpt-5.5", prompt: question });
      sub.step("Reading the docs");                       // a step row, and the "doing now" line
      const row = sub.tool({ name: "fetch", title: "Fetch the API page", kind: "fetch" });
      row.output("200 OK");
      row.end("completed");                               // or "failed", with content
      sub.text("The API has two endpoints.");             // streamed text; sub.reasoning(...) too
      sub.usage({ usedTokens: 1200 });
      sub.end({ status: "completed", summary: "Two endpoints" });
      return "The API has two endpoints.";
    },
  });
  api.tools.register({
    name: "research_left_running",
    description: "Starts a subagent and never ends it.",
    inputSchema: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
    async run({ question }: { question: string }, ctx: any) {
      const sub = await ctx.subagent.start({ title: "Research", agent: "codex", model: "gpt-5.5", prompt: question });
      sub.step("Reading the docs");
      return { answer: "The API has two endpoints.", shown: sub.shown };
    },
  });
  api.tools.register({
    name: "ids",
    description: "Answers who called.",
    run(_input: object, ctx: any) {
      return { callId: ctx.callId, workspaceId: ctx.workspaceId ?? null, agentId: ctx.agentId ?? null, chatId: ctx.chatId ?? null };
    },
  });
}
"""


class Status(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"health": "green", "release": "v42", "deployedAt": "today"}).encode()
        self.send_response(200 if self.path == "/status/api" else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def config_file(port):
    folder = tempfile.mkdtemp(prefix="codemode-ids-test-")
    plugin = os.path.join(folder, "m")
    os.makedirs(plugin)
    with open(os.path.join(plugin, "manifest.json"), "w") as f:
        f.write(MANIFEST)
    with open(os.path.join(plugin, "main.ts"), "w") as f:
        f.write(MAIN)
    path = os.path.join(folder, "codemode.toml")
    with open(path, "w") as f:
        f.write(f"""[[plugin]]
name = "m"
kind = "javascript"
path = "{plugin}"

[[plugin]]
name = "plico"
kind = "javascript"
path = "{FORMATS}/plico"
settings = {{ PLICO_TOKEN = "t" }}

[[plugin]]
name = "deploy"
kind = "javascript"
path = "{FORMATS}/podcode/deploy-watch.mjs"
settings = {{ endpoint = "http://127.0.0.1:{port}" }}
net_hosts = ["127.0.0.1:{port}"]
""")
    return path


def text_of(result):
    return [c.text for c in result.content if c.type == "text"]


async def call(session, name, arguments, meta=None, progress=False):
    """(the result's text as JSON when it is, its progress messages, seconds taken)."""
    messages = []

    async def on_progress(value, total, message):
        messages.append(message)

    started = time.monotonic()
    result = await session.call_tool(name, arguments, progress_callback=on_progress if progress else None, meta=meta)
    took = time.monotonic() - started
    check(not result.is_error, f"{name} {arguments}: {text_of(result)}")
    text = text_of(result)[0]
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = text
    return value, messages, took


async def execute(session, code, meta=None, progress=False):
    return await call(session, "execute", {"code": code}, meta, progress)


async def code_mode(config, port):
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=CLIENT) as session:
            await session.initialize()

            # Two calls in one execute: their own callIds and idempotency keys, both
            # traceable to the request; ctx.context is the request's _meta value.
            two = "return [JSON.parse(await tools.plico.whoami({})), JSON.parse(await tools.plico.whoami({}))]"
            meta = {"codemode/context": {"userId": "u-1"}}
            (first, second), _, _ = await execute(session, two, meta)
            key = re.fullmatch(r"plico:whoami:((\d+)-[0-9a-f]{17,}):1", first["key"])
            check(key is not None, f"the first call's key: {first['key']}")
            request = key.group(1)
            # Another session sending the same JSON-RPC id: other keys.
            async with stdio_client(params) as (read2, write2):
                async with ClientSession(read2, write2, client_info=CLIENT) as other:
                    await other.initialize()
                    (theirs, _), _, _ = await execute(other, two, meta)
            their_key = re.fullmatch(r"plico:whoami:((\d+)-[0-9a-f]{17,}):1", theirs["key"])
            check(their_key is not None and their_key.group(2) == key.group(2) and theirs["key"] != first["key"],
                  f"another session's execute with the same JSON-RPC id {key.group(2)}: {theirs['key']} beside {first['key']}")
            check(second["key"] == f"plico:whoami:{request}:2", f"the second call's key: {second['key']} (first {first['key']})")
            check(first["context"] == {"userId": "u-1"} and second["context"] == {"userId": "u-1"}, f"ctx.context: {first['context']}, {second['context']}")
            (again, _), _, _ = await execute(session, two)
            check(again["key"] != first["key"] and again["key"].endswith(":1"), f"another execute, other keys: {again['key']} after {first['key']}")
            check(again["context"] is None, f"ctx.context without _meta: {again['context']}")

            # seed 000's ctx: callId per call, workspaceId and chatId from _meta, agentId the client's name.
            ids, _, _ = await execute(session, "return [JSON.parse(await tools.m.ids({})), JSON.parse(await tools.m.ids({}))]", {"workspaceId": "ws-7", "chatId": "chat-3"})
            request = ids[0]["callId"].rsplit(":", 1)[0]
            check(ids == [
                {"callId": f"{request}:1", "workspaceId": "ws-7", "agentId": "ids-test", "chatId": "chat-3"},
                {"callId": f"{request}:2", "workspaceId": "ws-7", "agentId": "ids-test", "chatId": "chat-3"},
            ], f"seed 000 ctx: {ids}")

            # The document's subagent example: its rows reach the client as progress, in order.
            value, messages, _ = await execute(session, 'return await tools.m.research({ question: "What does the API offer?" })', progress=True)
            check(value == "The API has two endpoints.", f"research: {value}")
            expected = [
                "tools.m.research: subagent Research started (agent codex, model gpt-5.5)",
                "tools.m.research: subagent Research: step Reading the docs",
                'tools.m.research: subagent Research: tool Fetch the API page {"name":"fetch","title":"Fetch the API page","kind":"fetch"}',
                "tools.m.research: subagent Research: tool Fetch the API page output 200 OK",
                "tools.m.research: subagent Research: tool Fetch the API page completed",
                "tools.m.research: subagent Research: text The API has two endpoints.",
                'tools.m.research: subagent Research: usage {"usedTokens":1200}',
                "tools.m.research: subagent Research ended: completed (Two endpoints)",
                "tools.m.research answered",
            ]
            check(messages == expected, f"the subagent's rows as progress: {messages}")

            # Left running: the call answers at once, the subagent ends with it, shown.
            code = 'return await tools.m.research_left_running({ question: "q" })'
            value, messages, took = await execute(session, code, progress=True)
            check(value == {"answer": "The API has two endpoints.", "shown": True}, f"left running, with progress: {value}")
            check(took < 10, f"the call answered in {took:.1f} s, not at the plugin's timeout")
            check(messages == [
                "tools.m.research_left_running: subagent Research started (agent codex, model gpt-5.5)",
                "tools.m.research_left_running: subagent Research: step Reading the docs",
                "tools.m.research_left_running: subagent Research ended: completed with the call",
                "tools.m.research_left_running answered",
            ], f"the subagent ended with the call: {messages}")
            value, messages, _ = await execute(session, code)
            check(value == {"answer": "The API has two endpoints.", "shown": False}, f"without a progress token nothing is shown: {value}")

            # Podcode's ctx.metadata as progress; its identity from _meta and the client.
            code = 'return await tools.deploy.deploy_watch({ service: "api" })'
            value, messages, _ = await execute(session, code, {"chatId": "chat-3", "messageId": "msg-5"}, progress=True)
            request = value["callID"].rsplit(":", 1)[0]
            check(value == {"sessionID": "chat-3", "messageID": "msg-5", "callID": f"{request}:1", "agent": "ids-test"}, f"Podcode's identity: {value}")
            check(messages == [
                f'tools.deploy.deploy_watch: api — checking {{"endpoint":"http://127.0.0.1:{port}"}}',
                'tools.deploy.deploy_watch: api — green {"release":"v42"}',
                "tools.deploy.deploy_watch answered",
            ], f"ctx.metadata as progress: {messages}")
            value, _, _ = await execute(session, code)
            check(value["sessionID"] is None and value["messageID"] is None, f"nothing invented without _meta: {value}")


async def separate_tools(config):
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config, "--mode", "tools"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=CLIENT) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            check({"whoami", "research_left_running"} <= names, f"the tools, called directly: {sorted(names)}")
            # A tool called directly: the request's id is the call's.
            value, _, _ = await call(session, "whoami", {}, {"codemode/context": {"userId": "u-2"}})
            check(re.fullmatch(r"plico:whoami:\d+-[0-9a-f]{17,}", value["key"]) is not None, f"a direct call's key: {value['key']}")
            check(value["context"] == {"userId": "u-2"}, f"ctx.context of a direct call: {value['context']}")
            value, messages, took = await call(session, "research_left_running", {"question": "q"}, progress=True)
            check(value == {"answer": "The API has two endpoints.", "shown": True} and took < 10, f"a direct call's subagent: {value} in {took:.1f} s")
            check(messages == [
                "tools.m.research_left_running: subagent Research started (agent codex, model gpt-5.5)",
                "tools.m.research_left_running: subagent Research: step Reading the docs",
                "tools.m.research_left_running: subagent Research ended: completed with the call",
                "tools.m.research_left_running answered",
            ], f"a direct call's progress: {messages}")


async def rounds(config):
    asked = []

    async def on_elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept")

    server = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config])
    async with Client(server, mode="2026-07-28", elicitation_callback=on_elicit, client_info=CLIENT) as client:
        code = (
            "const first = JSON.parse(await tools.plico.whoami({})).key;"
            ' const slug = await tools.plico.slug({ title: "Hello World" });'
            " const last = JSON.parse(await tools.plico.whoami({})).key;"
            " return { first, slug, last }"
        )
        result = await client.call_tool("execute", {"code": code})
        check(not result.is_error, f"a program with a round: {text_of(result)}")
        value = json.loads(text_of(result)[0])
        key = re.fullmatch(r"plico:whoami:(.+):1", value["first"])
        check(key is not None and value["slug"] == "hello-world", f"the program went on after the round: {value}")
        check(value["last"] == f"plico:whoami:{key.group(1)}:3", f"after the round, the same request's id: {value}")
        check(len(asked) == 1 and "it publishes the slug" in asked[0], f"one round, for the approval: {asked}")


async def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Status)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    config = config_file(port)
    await code_mode(config, port)
    await separate_tools(config)
    await rounds(config)
    server.shutdown()
    print(f"plugin call identity, subagents and progress over MCP: {harness.CHECKS} checks passed")


if __name__ == "__main__":
    anyio.run(main)
