"""A remote MCP server as a codemode plugin, end to end with real peers on both sides.

Run by scripts/test-mcp-server.sh:

    python tests/mcp/test_remote_plugins.py path/to/codemode

The remote server is tests/plugins/mcp_http_server.py (the official MCP Python SDK over
streamable HTTP, behind an API key and a bearer token); the agent is the official SDK's
client driving `codemode mcp` (stdio) and `codemode serve` (HTTP). Checked:

- the configured `headers` and `bearer_token` (read from codemode's environment) reach
  the server, and wrong ones make the plugin unavailable with a message that says so;
- the server's progress during a call reaches the agent as the execute call's progress;
- the server's log messages reach codemode's log and, under `codemode mcp`, the agent
  as `notifications/message` under the plugin's name (`logging/setLevel` filters them);
  under `codemode serve` a session gets them only when the operator chose it;
- the server's question during a call (elicitation) reaches the agent with its form,
  and the answer goes back completed with the form's defaults; `codemode run` asks each
  field on the terminal (a pseudo-terminal here), `--accept-defaults` answers with the
  defaults alone, and without a terminal or the flag the question is refused;
- `notifications/tools/list_changed` over HTTP reaches later programs;
- `codemode auth login` on a plugin that sends its own token is refused (exit 2), and
  `codemode auth status` says which plugins log in and which send a token.
"""

import fcntl
import json
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import termios
import time

import anyio
import httpx2
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

import harness
from harness import CODEMODE, ROOT, check

KEY, TOKEN = "key-3c1f", "token-9ab2"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_remote():
    port = free_port()
    env = dict(os.environ, REMOTE_KEY=KEY, REMOTE_TOKEN=TOKEN)
    log = open(os.path.join(tempfile.mkdtemp(prefix="codemode-remote-server-"), "server.log"), "w")
    server = subprocess.Popen([sys.executable, "-W", "ignore", os.path.join(ROOT, "tests/plugins/mcp_http_server.py"), str(port)], env=env, stdout=log, stderr=log)
    deadline = time.time() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            break
        except OSError:
            check(time.time() < deadline and server.poll() is None, f"the remote test server started (its log: {log.name})")
            time.sleep(0.1)
    return server, f"http://127.0.0.1:{port}/mcp"


def write_config(url, extra=""):
    folder = tempfile.mkdtemp(prefix="codemode-remote-test-")
    path = os.path.join(folder, "codemode.toml")
    with open(path, "w") as f:
        f.write(f"""{extra}
[[plugin]]
name = "remote"
kind = "mcp"
url = "{url}"
# The server's tools ask in the session's way (elicitation requests during the call),
# so this test speaks the handshake revision to it; tests/mcp/test_mcp_2026.py covers
# 2026-07-28 servers.
protocol = "2025-11-25"
headers = {{ "X-Api-Key" = {{ env = "REMOTE_KEY" }} }}
bearer_token = {{ env = "REMOTE_TOKEN" }}
""")
    return path, dict(os.environ, REMOTE_KEY=KEY, REMOTE_TOKEN=TOKEN, XDG_DATA_HOME=folder)


def text_of(result):
    return [c.text for c in result.content if c.type == "text"]


async def execute(session, code, **kwargs):
    return await session.call_tool("execute", {"code": code}, **kwargs)


async def through_codemode_mcp(url):
    config, env = write_config(url)
    questions, logs, changed = [], [], anyio.Event()

    async def on_elicit(context, params):
        questions.append(params)
        if getattr(params, "mode", "form") == "url":
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content={"age": 41})

    async def on_log(params):
        logs.append(params)

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=on_elicit, logging_callback=on_log, message_handler=on_message) as session:
            init = await session.initialize()
            check(init.capabilities.logging is not None, "codemode's server offers logging")

            result = await execute(session, "return JSON.parse(await tools.remote.whoami())")
            check(json.loads(text_of(result)[0]) == {"api_key": True, "bearer": True}, f"headers and bearer token reach the server: {text_of(result)}")

            progress = []

            async def on_progress(value, total, message):
                progress.append(message)

            result = await execute(session, "return await tools.remote.long_job({ steps: 3 })", progress_callback=on_progress)
            check(text_of(result) == ["done after 3 steps"], f"long_job: {text_of(result)}")
            with anyio.fail_after(5):
                while not any("answered" in (m or "") for m in progress):
                    await anyio.sleep(0.02)
            for step in (1, 2, 3):
                check(f"tools.remote.long_job at {step} of 3: step {step}" in progress, f"the server's progress reaches the agent: {progress}")
            with anyio.fail_after(5):
                while sum("working on step" in str(p.data) for p in logs) < 3:
                    await anyio.sleep(0.02)
            step_logs = [p for p in logs if "working on step" in str(p.data)]
            check(all(p.logger == "remote" and p.level == "info" for p in step_logs), f"the server's logs reach the agent under the plugin's name: {step_logs}")

            await session.set_logging_level("warning")
            before = len(logs)
            result = await execute(session, "return await tools.remote.long_job({ steps: 2 })")
            check(text_of(result) == ["done after 2 steps"], f"long_job again: {text_of(result)}")
            await anyio.sleep(0.3)
            check(not any("working on step" in str(p.data) for p in logs[before:]), f"logging/setLevel warning filters info: {logs[before:]}")

            result = await execute(session, "return JSON.parse(await tools.remote.ask_profile())")
            check(len(questions) == 1, f"the server's question reached the agent: {questions}")
            question = questions[0]
            check("Who are you?" in question.message and "remote" in question.message, f"the question names its plugin: {question.message}")
            schema = question.requested_schema
            check(set(schema["properties"]) == {"name", "age"} and schema["properties"]["name"].get("default") == "Ann", f"the form comes as the server wrote it: {schema}")
            check(json.loads(text_of(result)[0]) == {"name": "Ann", "age": 41}, f"the answer went back with the form's defaults: {text_of(result)}")

            result = await execute(session, "return await tools.remote.open_page()")
            page = questions[-1]
            check(getattr(page, "mode", None) == "url" and page.url == "https://example.com/sign-in" and "Sign in at the example service" in page.message, f"a page the server sends the person to reaches the agent as URL elicitation: {page}")
            check(text_of(result) == ["page: accept"], f"and the person's answer goes back: {text_of(result)}")

            result = await execute(session, 'return await tools.remote.grow({ name: "fresh" })')
            check(text_of(result) == ["grown"], f"grow: {text_of(result)}")
            with anyio.fail_after(10):
                await changed.wait()
            result = await execute(session, "return await tools.remote.fresh()")
            check(text_of(result) == ["fresh says hi"], f"a tool the server added over HTTP is callable: {text_of(result)}")


def through_codemode_run(url):
    config, env = write_config(url)
    program = "return [await tools.remote.confirm_settings(), await tools.remote.ask_profile()]"
    run = lambda *flags: subprocess.run([CODEMODE, "run", "--config", config, *flags, "-"], input=program, capture_output=True, text=True, env=env, start_new_session=True, timeout=60)
    answered = run("--accept-defaults")
    check(answered.returncode == 0, f"--accept-defaults: {answered.stdout} {answered.stderr}")
    settings, profile = json.loads(answered.stdout)
    check(json.loads(settings) == {"color": "blue", "count": 3}, f"a form with defaults for every field is answered with them: {settings}")
    check(profile == "not given: decline", f"a form with a required field without a default is declined: {profile}")
    refused = run()
    check(json.loads(refused.stdout) == ["not given: decline"] * 2, f"without a terminal or the flag the questions are declined: {refused.stdout}")

    # On a terminal, each field is asked: Enter keeps a default, a wrong answer is asked again.
    answered = on_terminal([CODEMODE, "run", "--config", config, "-"], "return JSON.parse(await tools.remote.ask_profile())", env, [
        ("Fill in the form? [y/N]", "y"),
        ('Your name) ["Ann"]:', ""),
        ("Your age) (required):", "forty"),
        ('"forty" is not a whole number', None),
        ("Your age) (required):", "33"),
    ])
    check(json.loads(answered) == {"name": "Ann", "age": 33}, f"the form filled in on the terminal: {answered!r}")

    # Wrong credentials: the plugin is unavailable, and the message says which to check.
    wrong = dict(env, REMOTE_TOKEN="not-the-token")
    bad = subprocess.run([CODEMODE, "run", "--config", config, "-"], input="return await tools.remote.whoami()", capture_output=True, text=True, env=wrong, timeout=60)
    check(bad.returncode == 1 and "the server refused the configured credentials (HTTP 401)" in bad.stdout, f"wrong token: {bad.stdout}")

    login = subprocess.run([CODEMODE, "auth", "login", "remote", "--config", config], capture_output=True, text=True, env=env, timeout=60)
    check(login.returncode == 2 and "sends its own token" in login.stderr, f"login on a plugin with a token: {login.returncode} {login.stderr}")
    oauth_config = config + ".oauth.toml"
    with open(oauth_config, "w") as f:
        f.write(f'[[plugin]]\nname = "open"\nkind = "mcp"\nurl = "{url}"\n\n[[plugin]]\nname = "remote"\nkind = "mcp"\nurl = "{url}"\nbearer_token = {{ env = "REMOTE_TOKEN" }}\n')
    status = subprocess.run([CODEMODE, "auth", "status", "--config", oauth_config], capture_output=True, text=True, env=env, timeout=60)
    lines = status.stdout.splitlines()
    check(status.returncode == 0 and len(lines) == 2, f"auth status: {status.stdout} {status.stderr}")
    check(lines[0].startswith("open  ") and "not logged in" in lines[0] and "codemode auth login open" in lines[0], f"status of a plugin without a login: {lines[0]}")
    check(lines[1].startswith("remote  ") and "sends its configured token" in lines[1], f"status of a plugin with a token: {lines[1]}")
    unavailable = subprocess.run([CODEMODE, "run", "--config", oauth_config, "-"], input="return await tools.open.whoami()", capture_output=True, text=True, env=env, timeout=60)
    check("plugin open is unavailable" in unavailable.stdout and "the server needs authorization; run `codemode auth login open`" in unavailable.stdout, f"a server that asks for authorization names the command: {unavailable.stdout}")


def on_terminal(command, program, env, exchange):
    """Runs `command` with a pseudo-terminal as its controlling terminal (where codemode
    asks), the program on standard input; for each (prompt, answer) waits for the prompt
    and types the answer (None: only wait). Returns standard output."""
    master, slave = os.openpty()

    def controlling_terminal():
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True, preexec_fn=controlling_terminal, pass_fds=(slave,))
    process.stdin.write(program)
    process.stdin.close()
    seen = ""
    for prompt, answer in exchange:
        deadline = time.time() + 30
        while prompt not in seen:
            check(time.time() < deadline, f"the terminal showed {prompt!r}; it showed {seen!r}")
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                seen += os.read(master, 4096).decode(errors="replace")
        seen = seen[seen.index(prompt) + len(prompt):]
        if answer is not None:
            os.write(master, (answer + "\n").encode())
    out = process.stdout.read()
    process.wait(timeout=30)
    os.close(master)
    os.close(slave)
    return out


async def logs_under_serve(url):
    """Under `codemode serve`, logs reach only the sessions the operator chose."""
    for setting, token, expect in [("", "tenant", False), ('client_logs = { token_env = "LOG_TOKEN" }', "operator", True), ('client_logs = { token_env = "LOG_TOKEN" }', "tenant", False)]:
        config, env = write_config(url, f"[server]\n{setting}\n")
        env = dict(env, CODEMODE_TOKEN="tenant", LOG_TOKEN="operator")
        server = subprocess.Popen([CODEMODE, "serve", "--config", config, "--listen", "127.0.0.1:0"], env=env, stderr=subprocess.PIPE, text=True)
        try:
            address = None
            for line in server.stderr:
                found = re.search(r"serving MCP on (http://\S+)", line)
                if found:
                    address = found.group(1)
                    break
            logs = []

            async def on_log(params):
                logs.append(params)

            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
                async with streamable_http_client(address, http_client=client) as (read, write):
                    async with ClientSession(read, write, logging_callback=on_log) as session:
                        await session.initialize()
                        await session.set_logging_level("info")
                        result = await execute(session, "return await tools.remote.long_job({ steps: 2 })")
                        check(text_of(result) == ["done after 2 steps"], f"serve long_job: {text_of(result)}")
                        await anyio.sleep(0.5)
            got = any("working on step" in str(p.data) for p in logs)
            check(got == expect, f"serve with {setting or 'the default'} and the {token} token: logs {'expected' if expect else 'not expected'}: {logs}")
            if not expect:
                check(any("client_logs" in str(p.data) for p in logs), f"a session without logs is told why once: {logs}")
        finally:
            server.terminate()
            server.wait(timeout=10)


async def main():
    remote, url = start_remote()
    try:
        await through_codemode_mcp(url)
        through_codemode_run(url)
        await logs_under_serve(url)
    finally:
        remote.terminate()
        remote.wait(timeout=10)
    print(f"remote plugin test: {harness.CHECKS} checks passed")


if __name__ == "__main__":
    anyio.run(main)
