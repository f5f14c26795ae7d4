"""Seed 001's skills, agents and deferred catalog behind codemode's MCP server, driven
by the official MCP Python SDK, with the seed document's own example layout
(tests/plugins/skills/my-plugin, loaded unchanged):

    python tests/mcp/test_skills.py path/to/codemode

- the first execute description declares the root tool and has one line for the
  skill and one for the agent, and no private tool;
- a program loads `short-url` (`tools.$skills.load`), gets its SKILL.md text and the
  declaration of `normalize`, and calls it in the same program and in the next one;
- a second MCP session of the same server (`codemode serve`) has loaded nothing;
- `tools.$skills.discover` finds the skill by a natural query;
- a client's request `_meta` "codemode/agent" selects the agent for its session when
  `[server] client_agents` lets it (a name no plugin has is refused with the names
  there are; without the setting a client of `codemode serve` selects none);
- with `max_loaded_per_session = 1` and the agent selected in `[server]`, the agent's
  instructions are in the server's instructions, its private tool is callable, and a
  second load unloads the first tool;
- a broken private tool makes the plugin unavailable, saying which file and why;
- separate-tools mode offers `load_skill`, `load_tool` and `discover`, and after a load
  sends notifications/tools/list_changed and lists the new tool;
- a hidden tool is callable but absent from `tools.$search`;
- two `--stateless` replicas: a request is a session of its own (load and call in one
  program, on either replica; the next request starts with nothing loaded).
"""

import json
import os
import re
import shutil
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

MY_PLUGIN = os.path.join(ROOT, "tests/plugins/skills/my-plugin")
NOT_LOADED = "tools.my_plugin.short_url__normalize is private to skill short-url of plugin my-plugin, which this session has not loaded (or has unloaded to make room): load it first with `await tools.$skills.load(\"short-url\")`"
NORMALIZE = 'tools.my_plugin.short_url__normalize({ url: "https://Example.COM/a/?utm_source=x" })'


def write_config(text):
    path = os.path.join(tempfile.mkdtemp(prefix="codemode-skills-test-"), "codemode.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def plugin_entry(path, name="my-plugin"):
    return f'[[plugin]]\nname = "{name}"\nkind = "javascript"\npath = "{path}"\n'


def text_of(result):
    return [c.text for c in result.content if c.type == "text"]


async def execute(session, code):
    result = await session.call_tool("execute", {"code": code})
    check(not result.is_error, f"{code}: {text_of(result)}")
    text = text_of(result)[0]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


async def rejection(session, call):
    return await execute(session, f"try {{ await {call}; return null }} catch (e) {{ return e.message }}")


def start_serve(config, *extra):
    env = dict(os.environ)
    env.pop("CODEMODE_TOKEN", None)
    server = subprocess.Popen([CODEMODE, "serve", "--config", config, "--listen", "127.0.0.1:0", *extra], env=env, stderr=subprocess.PIPE, text=True)
    for line in server.stderr:
        found = re.search(r"serving MCP on (http://\S+)", line)
        if found:
            return server, found.group(1)
    raise AssertionError("codemode serve printed no address")


async def two_sessions(config):
    server, url = start_serve(config)
    try:
        async with httpx2.AsyncClient(timeout=60) as client:
            async with streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write) as first:
                    await first.initialize()
                    description = (await first.list_tools()).tools[0].description
                    check("\"short-url\"(input: {\n      /** The long URL */" in description, "the root tool is declared")
                    check("\nThe skills:\n- short-url (tools.my_plugin): Shorten links for chat messages, normalizing each link first so that one page always gets the same s…\n" in description, f"one line for the skill: {description}")
                    check("- reviewer (tools.my_plugin): Reviews short links before they are posted\n" in description, "one line for the agent")
                    check("normalize" not in description and "check_result" not in description and "- review " not in description, "no private tool, no agent's skill")
                    check("`await tools.$skills.load(\"name\")`" in description, "how to load is said")

                    check(await rejection(first, NORMALIZE) == NOT_LOADED, "not callable before its skill is loaded")
                    loaded = await execute(first, f"""const skill = await tools.$skills.load("short-url");
                        return {{ skill, normalized: await {NORMALIZE} }};""")
                    skill = loaded["skill"]
                    check(skill["instructions"].startswith("# Short links\n\n1. Normalize the link with `normalize`"), f"SKILL.md's body: {skill}")
                    check(skill["declarations"] == "/** Normalize a URL: lower-case host, no tracking parameters, no trailing slash */\ntools.my_plugin.short_url__normalize(input: {\n  /** The URL as written */\n  url: string;\n}): Promise<string>;\n", f"its declaration: {skill}")
                    check(loaded["normalized"] == "https://example.com/a", f"called in the same program: {loaded}")
                    check(await execute(first, f"return await {NORMALIZE}") == "https://example.com/a", "and in the next program")

                    async with streamable_http_client(url, http_client=client) as (read2, write2):
                        async with ClientSession(read2, write2) as second:
                            await second.initialize()
                            check(await rejection(second, NORMALIZE) == NOT_LOADED, "a second session has loaded nothing")

                    hits = await execute(first, 'return await tools.$skills.discover("make a link shorter for a chat message")')
                    check(any(h["kind"] == "skill" and h["skill"] == "short-url" for h in hits), f"discover finds the skill: {hits}")

                    # A client selects an agent for its session with `_meta` "codemode/agent".
                    check_call = 'return await tools.my_plugin.reviewer__check_result({ short: "https://s.example/abc" })'
                    # A name no plugin has is refused with the names there are, shown cut.
                    for named in ("nobody", "n" * (512 << 10)):
                        refused = await first.call_tool("execute", {"code": "return 1"}, meta={"codemode/agent": named})
                        shown = named if len(named) < 80 else named[:80] + "…"
                        check(refused.is_error and text_of(refused) == [f'the request\'s _meta "codemode/agent" selects agent "{shown}", which no enabled plugin has; the agents are my-plugin/reviewer'],
                              f"an unknown agent is refused: {text_of(refused)[0][:300]}")
                    result = await first.call_tool("execute", {"code": check_call}, meta={"codemode/agent": "reviewer"})
                    check(not result.is_error and text_of(result) == ["ok"], f"the agent's tool after _meta selects it: {text_of(result)}")
                    check(await execute(first, check_call) == "ok", "the selection lasts for the session")
    finally:
        server.terminate()
        server.wait(timeout=10)


async def stateless_replicas(config):
    """Without sessions (`--stateless`, behind a load balancer) a request is a session of
    its own: a program loads and calls in the same request on either replica, and the
    next request, on the other replica, starts with nothing loaded."""
    replicas = [start_serve(config, "--stateless") for _ in range(2)]
    try:
        async with httpx2.AsyncClient(timeout=60) as client:
            for index, (_, url) in enumerate(replicas):
                async with streamable_http_client(url, http_client=client) as (read, write):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        if index == 0:
                            # Without [server] client_agents, a client of codemode serve selects no agent.
                            refused = await session.call_tool("execute", {"code": "return 1"}, meta={"codemode/agent": "reviewer"})
                            check(refused.is_error and text_of(refused) == ['the request\'s _meta "codemode/agent" selects agent my-plugin/reviewer, but this server lets clients select no agent: the operator lists the ones they may in [server] client_agents'],
                                  f"an agent the server does not let clients select is refused: {text_of(refused)}")
                            value = await execute(session, f'await tools.$skills.load("short-url"); return await {NORMALIZE}')
                            check(value == "https://example.com/a", f"load and call in one request: {value}")
                        else:
                            check(await rejection(session, NORMALIZE) == NOT_LOADED, "the other replica's request has loaded nothing")
    finally:
        for server, _ in replicas:
            server.terminate()
            server.wait(timeout=10)


async def configured_agent_and_eviction():
    config = write_config(plugin_entry(MY_PLUGIN) + '\n[server]\nagent = "reviewer"\nmax_loaded_per_session = 1\n')
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            instructions = init.instructions or ""
            check("## my-plugin: AGENTS.md\n\n# my-plugin\n\nLinks in answers are short links made with `short-url`; never invent a link." in instructions, f"AGENTS.md: {instructions}")
            check("## reviewer: boundaries.md\n\nNever post a link yourself; report what you found." in instructions, f"the agent's files: {instructions}")
            checked = await execute(session, 'return await tools.my_plugin.reviewer__check_result({ short: "https://s.example/abc" })')
            check(checked == "ok", f"the agent's private tool: {checked}")
            result = await execute(session, """await tools.$skills.load("short-url");
                const review = await tools.$skills.load("review");
                return review.unloaded;""")
            check(result == ["tools.my_plugin.short_url__normalize"], f"the least recently used is unloaded: {result}")
            check(await rejection(session, NORMALIZE) == NOT_LOADED, "the unloaded tool is not callable")


async def broken_private_tool():
    copy = os.path.join(tempfile.mkdtemp(prefix="codemode-skills-broken-"), "my-plugin")
    shutil.copytree(MY_PLUGIN, copy)
    with open(os.path.join(copy, "skills/short-url/tools/normalize/index.ts"), "w") as f:
        f.write("import { defineAgentTool } from '@zhin.js/tool';\nexport default defineAgentTool({ execute: async () => 'x' });\n")
    config = write_config(plugin_entry(copy))
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            why = await rejection(session, 'tools.my_plugin.short_url({ url: "https://a.example" })')
            check("skills/short-url/tools/normalize/index.ts: `description` is required: say what the tool does and when to use it" in why, f"the broken private tool is reported: {why}")


async def separate_tools():
    changed = anyio.Event()

    async def on_message(message):
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            changed.set()

    config = write_config(plugin_entry(MY_PLUGIN))
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config, "--mode", "tools"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            await session.initialize()
            names = sorted(t.name for t in (await session.list_tools()).tools)
            check(names == ["discover", "load_skill", "load_tool", "short-url"], f"the root tool and the three: {names}")
            result = await session.call_tool("load_skill", {"name": "short-url"})
            loaded = json.loads(text_of(result)[0])
            check(not result.is_error and loaded["tools"] == ["tools.my_plugin.short_url__normalize"], f"load_skill: {loaded}")
            with anyio.fail_after(10):
                await changed.wait()
            names = sorted(t.name for t in (await session.list_tools()).tools)
            check("short-url__normalize" in names, f"the loaded tool is listed after list_changed: {names}")
            result = await session.call_tool("short-url__normalize", {"url": "https://Example.COM/b/"})
            check(text_of(result) == ["https://example.com/b"], f"and callable: {text_of(result)}")


async def hidden_tool():
    folder = tempfile.mkdtemp(prefix="codemode-skills-hidden-")
    for name, hidden in [("rotate-keys", "true"), ("list-keys", "false")]:
        os.makedirs(os.path.join(folder, "tools", name))
        with open(os.path.join(folder, "tools", name, "index.ts"), "w") as f:
            f.write(f"import {{ defineAgentTool }} from '@zhin.js/tool';\nexport default defineAgentTool({{ description: 'Rotate or list the signing keys of the vault', hidden: {hidden}, requiresApproval: 'never', execute: async () => '{name} done' }});\n")
    config = write_config(plugin_entry(folder, "vault"))
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            found = await execute(session, """const hits = await tools.$search("rotate the vault's signing keys", { limit: 50 });
                return { calls: hits.map((h) => h.call), called: await tools.vault.rotate_keys({}) };""")
            check(found == {"calls": ["tools.vault.list_keys"], "called": "rotate-keys done"}, f"hidden: callable, never found: {found}")


async def main():
    await two_sessions(write_config('[server]\nclient_agents = ["reviewer"]\n\n' + plugin_entry(MY_PLUGIN)))
    await stateless_replicas(write_config(plugin_entry(MY_PLUGIN)))
    await configured_agent_and_eviction()
    await broken_private_tool()
    await separate_tools()
    await hidden_tool()
    print(f"skills over MCP: {harness.CHECKS} checks passed")


if __name__ == "__main__":
    anyio.run(main)
