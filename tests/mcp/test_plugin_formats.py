"""The seed systems' plugin formats behind codemode's MCP server, driven by the official
MCP Python SDK: what an agent sees (declarations from zod schemas, hidden tools left
out) and the approvals each format asks for, answered through elicitation.

Run by scripts/test-mcp-server.sh after scripts/npm-fixtures.sh installed the fixtures:

    python tests/mcp/test_plugin_formats.py path/to/codemode

- zhin.js `requiresApproval: 'once'` asks on the first call of a session only; the
  default `'on-risk'` asks on every call of a tool not annotated read-only (and not for
  one that is);
- plico `approval: { required: true, reason }` asks with the reason;
- Podcode `ctx.ask(...)` reaches the person through the plugin's `host/approve`, and a
  refusal throws in the tool; an attachment comes back as image content;
- seed 000's `ctx.approve(...)` (the js-test plugin) hears the person's answer.
"""

import http.server
import json
import os
import tempfile
import threading

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import harness
from harness import CODEMODE, ROOT, check

FORMATS = os.path.join(ROOT, "target/formats")


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
    folder = tempfile.mkdtemp(prefix="codemode-formats-test-")
    path = os.path.join(folder, "codemode.toml")
    with open(path, "w") as f:
        f.write(f"""[[plugin]]
name = "words"
kind = "javascript"
path = "{FORMATS}/effect4"

[[plugin]]
name = "bot"
kind = "javascript"
path = "{FORMATS}/zhin"

[[plugin]]
name = "plico"
kind = "javascript"
path = "{FORMATS}/plico"
settings = {{ PLICO_TOKEN = "t" }}

[[plugin]]
name = "deploy"
kind = "javascript"
path = "{FORMATS}/podcode/deploy-status.mjs"
settings = {{ endpoint = "http://127.0.0.1:{port}" }}
net_hosts = ["127.0.0.1:{port}"]

[[plugin]]
name = "js"
kind = "javascript"
path = "{ROOT}/tests/plugins/js-test"
""")
    return path


def text_of(result):
    return [c.text for c in result.content if c.type == "text"]


async def execute(session, code):
    result = await session.call_tool("execute", {"code": code})
    check(not result.is_error, f"{code}: {text_of(result)}")
    text = text_of(result)[0]
    # A returned string comes back as it is; anything else as JSON text.
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


async def code_mode(config):
    asked = []

    async def on_elicit(context, params):
        asked.append(params.message)
        declined = "decline me" in params.message or '"patterns": [\n    "web"' in params.message
        return types.ElicitResult(action="decline" if declined else "accept")

    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=on_elicit) as session:
            await session.initialize()
            description = (await session.list_tools()).tools[0].description
            for needle in [
                '"word-count"(input: {',
                "minLength?: number;",
                "echo(input: {",
                "       * What to echo\n       * At least 1 character.\n",
                "/** Integer, 1 to 5. Default: `1`. */",
                "slug(input: {",
                "deploy_status(input: {",
            ]:
                check(needle in description, f"the execute description declares {needle!r}")
            check("touch(" not in description, "a hidden tool is not declared")
            check("tools.bot.short_url" in description and "tools.bot.wipe" in description, "tools that ask are named as such")

            # A hidden tool is callable all the same.
            check(await execute(session, 'return await tools.bot.touch({ member: "owner" })') == "owner: string", "hidden tool call")

            # zhin 'once': the first call of the session asks, the second does not.
            first = await execute(session, 'return JSON.parse(await tools.bot.short_url({ url: "https://example.com/a" }))')
            second = await execute(session, 'return JSON.parse(await tools.bot.short_url({ url: "https://example.com/b" }))')
            check(first["short"] != second["short"], "both short_url calls ran")
            check(len([m for m in asked if "short-url" in m]) == 1, f"'once' asked once: {asked}")

            # zhin 'on-risk' (the default) asks for a destructive tool, every call.
            await execute(session, 'return await tools.bot.wipe({ user: "ann" })')
            result = await execute(session, 'try { await tools.bot.wipe({ user: "decline me" }) } catch (e) { return e.message }')
            check(result == "the person declined the call to tools.bot.wipe", f"declined wipe: {result}")
            check(len([m for m in asked if "wipe" in m]) == 2, f"on-risk asked for each destructive call: {asked}")
            # ...and for the document's own echo example, which does not say it is read-only;
            # touch says readOnlyHint, so it ran above without asking.
            check(await execute(session, 'return await tools.bot.say({ message: "hi" })') == "echo: hi", "say ran")
            check(len([m for m in asked if "tools.bot.say" in m or "tool say " in m]) == 1, f"on-risk asked for say: {asked}")
            check(not [m for m in asked if "touch" in m], f"on-risk did not ask for a read-only tool: {asked}")

            # plico approval.required asks with its reason.
            slug = await execute(session, 'return await tools.plico.slug({ title: "Hello World" })')
            check(slug == "hello-world", f"slug: {slug}")
            check(any("tool slug of plugin plico (it publishes the slug)" in m for m in asked), f"the reason is shown: {asked}")

            # Podcode ctx.ask through host/approve; an accepted call returns its attachment.
            # The returned content list reaches the agent as content: its text, then the image.
            result = await session.call_tool("execute", {"code": 'return await tools.deploy.rollback({ service: "api" })'})
            blocks = [(c.type, getattr(c, "text", None) or getattr(c, "data", None)) for c in result.content]
            check(not result.is_error and blocks == [("text", "would roll api back"), ("image", "iVBORw0KGgo=")], f"rollback content: {blocks}")
            check(result.content[1].mime_type == "image/png", f"the attachment is image content: {result.content[1]}")
            check(any('The tool rollback of plugin deploy asks: Allow tool rollback the "deploy" permission for api?' in m for m in asked), f"ctx.ask reached the person: {asked}")
            refused = await execute(session, 'try { await tools.deploy.rollback({ service: "web" }) } catch (e) { return e.message }')
            check(refused == "the person did not allow deploy: the person declined", f"a refused ctx.ask throws in the tool: {refused}")

            # Seed 000's ctx.approve hears the person's answer.
            answer = await execute(session, "return JSON.parse(await tools.js.approve())")
            check(answer == {"approved": True}, f"ctx.approve: {answer}")


async def separate_tools(config):
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config, "--mode", "tools"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            # bot and js both have an echo: each gets its plugin's name in front.
            check("bot_echo" in tools and "js_echo" in tools and "touch" not in tools, f"a hidden tool is not listed: {sorted(tools)}")
            check(tools["bot_echo"].input_schema["properties"]["times"]["default"] == 1, "zod's default reaches the MCP schema")
            result = await session.call_tool("word-count", {"text": "one two three"})
            check(result.structured_content == {"words": 3}, f"zod output as structured content: {result.structured_content}")


async def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Status)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    config = config_file(server.server_address[1])
    await code_mode(config)
    await separate_tools(config)
    server.shutdown()
    print(f"plugin formats over MCP: {harness.CHECKS} checks passed")


if __name__ == "__main__":
    anyio.run(main)
