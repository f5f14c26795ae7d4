"""MCP 2026-07-28 (the stateless revision) on both sides of codemode, with real peers.

Run by scripts/test-mcp-server.sh:

    python tests/mcp/test_mcp_2026.py path/to/codemode

codemode as the server, driven by the official MCP Python SDK's client pinned to
2026-07-28 (`mode="2026-07-28"`: no handshake, `_meta` on every request):
- over stdio (`codemode mcp`) and streamable HTTP (`codemode serve`): tools/list with its
  cache hints, `execute`, a tool that needs approval (the question arrives as "input
  required", the program waits in its worker, and goes on with the answer: accepted,
  declined, twice in one program), the client's name as `ctx.agentId`, tool list
  changes through `subscriptions/listen`;
- a program whose plugin is itself a 2026-07-28 server asking a question the same way
  (the Python SDK's resolver `Elicit`): the question travels plugin → codemode → client
  and back, for a strict client and a handshake-era one, and to the terminal under
  `codemode run`;
- two `codemode serve` replicas with one state key behind a plain round-robin proxy: a
  program with an approval in the middle, its retry reaching the other replica;
- the same by hand, request by request: a retry sent to the other replica is passed on
  to the one holding the program; a state that is forged, or sent with another
  client's credential, is refused; when the replica holding the program is gone, the
  retry says so.

With the TypeScript SDK v2 installed (the second argument, scripts/lib.sh's
ensure_ts_sdk), also:
- its client pinned to 2026-07-28 (tests/mcp/strict_client.mjs) against `codemode mcp`
  and `codemode serve`;
- a server of that SDK that refuses every earlier revision (tests/plugins/
  mcp2026_server.mjs, `legacy: 'reject'`) as a plugin over stdio and over HTTP: its
  tools, its question through Multi Round-Trip Requests on to the agent and back, its
  tool list changes through `subscriptions/listen`, and its cache hint (ttlMs 60 s:
  codemode lists it once at start, and again only after a change).
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import warnings

import anyio
import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

import harness
from harness import CODEMODE, ROOT, check
from test_remote_plugins import on_terminal

warnings.simplefilter("ignore")

TOKEN = "token-of-client-a"
OTHER_TOKEN = "token-of-client-b"
STATE_KEY = "k" * 48


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def subfolder(folder, name):
    path = os.path.join(folder, name)
    os.makedirs(path, exist_ok=True)
    return path


def config(folder, extra=""):
    path = os.path.join(folder, "codemode.toml")
    with open(path, "w") as f:
        f.write(f"""example_tools = true

[[plugin]]
name = "ops"
kind = "process"
command = "python3"
args = ["{ROOT}/tests/plugins/test_plugin.py"]
require_approval = ["echo"]
{extra}""")
    return path


def texts(result):
    return [c.text for c in result.content if getattr(c, "type", "") == "text"]


class Asker:
    """An elicitation callback that records the questions and answers as told."""

    def __init__(self, action="accept", content=None):
        self.action, self.content, self.asked = action, content or {}, []

    async def __call__(self, context, params):
        self.asked.append(params.message)
        if self.action == "accept":
            return types.ElicitResult(action="accept", content=self.content)
        return types.ElicitResult(action=self.action)


async def strict_session_checks(server, label):
    """The checks a strict 2026-07-28 client runs against codemode (stdio or HTTP)."""
    asker = Asker()
    info = types.Implementation(name="strict-agent", version="1")
    async with Client(server, mode="2026-07-28", elicitation_callback=asker, client_info=info) as client:
        listed = await client.list_tools()
        check([t.name for t in listed.tools] == ["execute"], f"{label}: one tool, execute: {listed.tools}")
        check(listed.ttl_ms == 1000 and str(listed.cache_scope).endswith("public"), f"{label}: cache hints: {listed.ttl_ms} {listed.cache_scope}")
        result = await client.call_tool("execute", {"code": "return await tools.math.add({ a: 1, b: 2 })"})
        check(texts(result) == ["3"] and not result.is_error, f"{label}: execute: {texts(result)}")
        # An approval in the middle: the program waits for the answer, then goes on.
        result = await client.call_tool(
            "execute", {"code": "const first = await tools.ops.echo({ x: 1 }); return { first, after: 2 }"}
        )
        check(texts(result) == ['{"first":"{\\"x\\":1}","after":2}'], f"{label}: approved and went on: {texts(result)}")
        check(len(asker.asked) == 1 and "Allow the tool echo of plugin ops" in asker.asked[0], f"{label}: the question: {asker.asked}")
        # Two questions, one after the other, in one program.
        result = await client.call_tool(
            "execute", {"code": "await tools.ops.echo({ a: 1 }); await tools.ops.echo({ b: 2 }); return 'both'"}
        )
        check(texts(result) == ["both"] and len(asker.asked) == 3, f"{label}: two approvals: {texts(result)} {len(asker.asked)}")
        # Declined: the call rejects in the program, which goes on.
        asker.action = "decline"
        result = await client.call_tool(
            "execute", {"code": "try { await tools.ops.echo({ c: 3 }) } catch (e) { return e.message }"}
        )
        check(texts(result) == ["the person declined the call to tools.ops.echo"], f"{label}: declined: {texts(result)}")
        # Who calls: the client's name from the request's _meta.
        result = await client.call_tool("execute", {"code": "return (await tools.ops.context({})).agentId"})
        check(texts(result) == ["strict-agent"], f"{label}: ctx.agentId from _meta: {texts(result)}")
        # Tool list changes reach a listener. Other changes may come first (the search
        # model finishing its load changes the description too): each one is a list
        # change, and the one for the new tool comes by the deadline.
        async with client.listen(tools_list_changed=True) as subscription:
            await client.call_tool("execute", {"code": "return await tools.ops['add-tool']({ name: 'fresh' })"})
            result = None
            with anyio.fail_after(10):
                async for event in subscription:
                    check("tools" in type(event).__name__.lower() or "list" in str(event).lower(), f"{label}: a list change: {event}")
                    result = await client.call_tool("execute", {"code": "return await tools.ops.fresh({})"})
                    if texts(result) == ["hello from fresh"]:
                        break
        check(texts(result) == ["hello from fresh"], f"{label}: the new tool is callable: {texts(result)}")


def serve(config_path, port, env=None, replica=None, extra=()):
    args = [CODEMODE, "serve", "--config", config_path, "--listen", f"127.0.0.1:{port}", *extra]
    if replica:
        args += ["--replica-url", replica]
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    for line in process.stderr:
        if "serving MCP on" in line:
            break
    threading_drain(process.stderr)
    return process


def threading_drain(stream):
    import threading

    threading.Thread(target=lambda: [None for _ in stream], daemon=True).start()


META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-agent", "version": "1"},
}


def call(url, arguments=None, state=None, responses=None, token=TOKEN, meta=None):
    """One 2026-07-28 `tools/call execute` over HTTP, as bytes on the wire: the JSON-RPC answer."""
    params = {"name": "execute", "arguments": arguments or {}, "_meta": dict(META, **(meta or {}))}
    if state:
        params["requestState"] = state
    if responses:
        params["inputResponses"] = responses
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()
    request = urllib.request.Request(url, data=body, method="POST")
    for key, value in {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {token}",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "execute",
    }.items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read().decode()
    except urllib.error.HTTPError as e:
        text = e.read().decode()
    for line in [text] + [l[5:] for l in text.splitlines() if l.startswith("data:")]:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if "result" in message or "error" in message:
            return message
    raise AssertionError(f"no JSON-RPC answer in {text[:300]}")


def replicas_by_hand(folder):
    """A retry sent to the other replica, states that must not open, a replica gone."""
    path = config(folder, '\n[server]\nclient_logs = { token_env = "OPS_TOKEN" }\n')
    env = dict(os.environ, CODEMODE_TOKEN=TOKEN, OPS_TOKEN=OTHER_TOKEN, CODEMODE_STATE_KEY=STATE_KEY)
    pa, pb = free_port(), free_port()
    a_url, b_url = f"http://127.0.0.1:{pa}/mcp", f"http://127.0.0.1:{pb}/mcp"
    a = serve(path, pa, env, replica=a_url)
    b = serve(path, pb, env, replica=b_url)
    try:
        program = {"code": "const echoed = await tools.ops.echo({ from: 'replica' }); return { echoed, workspace: (await tools.ops.context({})).workspace }"}
        first = call(a_url, program, meta={"workspace": "/srv/project"})
        result = first["result"]
        check(result.get("resultType") == "input_required", f"the first round asks: {result}")
        (key, question), = result["inputRequests"].items()
        check(question["method"] == "elicitation/create" and "echo" in question["params"]["message"], f"an elicitation: {question}")
        state = result["requestState"]
        # Refused: another client's credential, a forged state (one character changed).
        other = call(b_url, state=state, responses={key: {"action": "accept", "content": {}}}, token=OTHER_TOKEN)
        check("error" in other and "requestState is not one this server gave you" in other["error"]["message"], f"another client's retry is refused: {other}")
        forged = state[:-3] + ("AAA" if not state.endswith("AAA") else "BBB")
        refused = call(b_url, state=forged, responses={key: {"action": "accept", "content": {}}})
        check("error" in refused and refused["error"]["message"] == other["error"]["message"], f"a forged state is refused the same way: {refused}")
        # The retry reaches the other replica, which passes it on to the one holding it.
        done = call(b_url, program, state=state, responses={key: {"action": "accept", "content": {}}})["result"]
        check(done.get("isError") is False or "isError" not in done or not done["isError"], f"the program finished: {done}")
        value = json.loads(done["content"][0]["text"])
        check(value == {"echoed": '{"from":"replica"}', "workspace": "/srv/project"}, f"through replica B to A, with _meta's workspace: {value}")
        # The run is over: its state opens nothing any more.
        again = call(a_url, state=state)
        check("error" in again, f"a used-up state is refused: {again}")
        # A replica gone: its program goes with it, and the retry says so.
        first = call(a_url, program)["result"]
        (key, _), = first["inputRequests"].items()
        a.send_signal(signal.SIGKILL)
        a.wait()
        gone = call(b_url, program, state=first["requestState"], responses={key: {"action": "accept", "content": {}}})["result"]
        check(gone.get("isError") and gone["content"][0]["text"] == "the codemode replica that ran this program cannot be reached; the program was lost with it: run it again", f"a retry for a replica that is gone, naming no address: {gone}")
    finally:
        for p in (a, b):
            if p.poll() is None:
                p.kill()
                p.wait()


async def behind_round_robin(folder):
    """Two replicas behind a plain round-robin proxy, a strict client, an approval in the middle."""
    path = config(folder)
    env = dict(os.environ, CODEMODE_STATE_KEY=STATE_KEY)
    ports = [free_port(), free_port()]
    urls = [f"http://127.0.0.1:{p}/mcp" for p in ports]
    replicas = [serve(path, p, env, replica=u) for p, u in zip(ports, urls)]
    proxy_port = free_port()
    proxy = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests/mcp/round_robin.py"), str(proxy_port), *urls], stdout=subprocess.PIPE, text=True)
    proxy.stdout.readline()
    try:
        asker = Asker()
        async with Client(f"http://127.0.0.1:{proxy_port}/mcp", mode="2026-07-28", elicitation_callback=asker) as client:
            for round_number in range(3):
                result = await client.call_tool(
                    "execute", {"code": f"const a = await tools.ops.echo({{ n: {round_number} }}); return {{ a, n: {round_number} }}"}
                )
                check(texts(result) == [f'{{"a":"{{\\"n\\":{round_number}}}","n":{round_number}}}'], f"round robin, program {round_number}: {texts(result)}")
            check(len(asker.asked) == 3, f"each program asked once: {asker.asked}")
    finally:
        proxy.kill()
        for r in replicas:
            r.kill()
            r.wait()


async def plugin_that_asks(folder):
    """A 2026-07-28 plugin server's question reaches the agent and its answer comes back."""
    port = free_port()
    count = os.path.join(folder, "lists")
    server = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "tests/plugins/mcp2026_py_server.py"), str(port)],
        env=dict(os.environ, COUNT_FILE=count),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        path = config(folder, f'\n[[plugin]]\nname = "py"\nkind = "mcp"\nurl = "http://127.0.0.1:{port}/mcp"\n')
        era = subprocess.run([CODEMODE, "run", "--config", path, "-"], input="return JSON.parse(await tools.py.era({})).protocol", capture_output=True, text=True, timeout=60)
        check(era.stdout.strip() == "2026-07-28", f"codemode speaks 2026-07-28 to a server that offers it: {era.stdout} {era.stderr[-300:]}")
        # Under `codemode run` the same question is asked on the terminal.
        out = on_terminal(
            [CODEMODE, "run", "--config", path, "-"],
            "return await tools.py.pick_color({})",
            dict(os.environ),
            [("Which color should it be?", None), ("Fill in the form? [y/N] ", "y"), ("color", "teal")],
        )
        check(out.strip() == "picked teal", f"the plugin's question answered on the terminal: {out!r}")
        for mode in ("2026-07-28", "legacy"):
            asker = Asker(content={"color": "teal"})
            params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", path])
            async with Client(params, mode=mode, elicitation_callback=asker) as client:
                result = await client.call_tool("execute", {"code": "return await tools.py.pick_color({})"})
                check(texts(result) == ["picked teal"], f"the plugin's question answered by a {mode} client: {texts(result)}")
                check(asker.asked == ["The tool pick_color of plugin py asks: Which color should it be?"], f"the question as the person reads it ({mode}): {asker.asked}")
    finally:
        server.kill()
        server.wait()


def ts_sdk_checks(ts_dir):
    """The TypeScript SDK v2's pinned client and 2026-only server (see the module docs)."""
    folder = tempfile.mkdtemp(prefix="codemode-2026-ts-")
    server = os.path.join(ts_dir, "mcp2026_server.mjs")
    client = os.path.join(ts_dir, "strict_client.mjs")
    count = os.path.join(folder, "lists")
    http = subprocess.Popen(["node", server, "http", "0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=dict(os.environ, COUNT_FILE=count))
    try:
        line = http.stderr.readline()
        check("listening on" in line, f"the TypeScript server listens: {line}")
        port = int(line.split()[-1])
        threading_drain(http.stderr)
        for transport, entry in (
            ("stdio", f'command = "node"\nargs = ["{server}", "stdio"]'),
            ("http", f'url = "http://127.0.0.1:{port}/mcp"'),
        ):
            path = config(subfolder(folder, transport), f'\n[[plugin]]\nname = "ts2026"\nkind = "mcp"\n{entry}\n')
            # The program, the plugin server and its question, through codemode as a
            # 2026 server and a 2026 client at once.
            run = subprocess.run(["node", client, "stdio", CODEMODE, path], capture_output=True, text=True, timeout=120, env=dict(os.environ, TS_PLUGIN="1"))
            check(run.returncode == 0 and '"ok":true' in run.stdout, f"the TypeScript strict client with a {transport} 2026-only plugin: {run.stdout[-400:]} {run.stderr[-400:]}")
            probe = subprocess.run(
                [CODEMODE, "run", "--config", path, "-"],
                input="return [await tools.ts2026.echo({ text: 'hi' }), JSON.parse(await tools.ts2026.whoami({})).protocolVersion]",
                capture_output=True,
                text=True,
                timeout=60,
            )
            check(probe.stdout.strip() == '["echo: hi","2026-07-28"]', f"codemode speaks 2026-07-28 to the {transport} server: {probe.stdout} {probe.stderr[-300:]}")
        path = config(subfolder(folder, "grow"), f'\n[[plugin]]\nname = "ts2026"\nkind = "mcp"\nurl = "http://127.0.0.1:{port}/mcp"\n')
        params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", path])

        # The server's cache hint is 60 s: one codemode process lists it once, at
        # start, however many programs call it.
        async def programs():
            async with Client(params, mode="2026-07-28") as c:
                for i in range(5):
                    await c.call_tool("execute", {"code": f"return await tools.ts2026.echo({{ text: '{i}' }})"})

        before = len(open(count).read().splitlines())
        anyio.run(programs)
        lists = len(open(count).read().splitlines()) - before
        check(lists == 1, f"one codemode process listed the server once for five programs: {lists}")

        # A change reaches codemode through subscriptions/listen: the new tool is there
        # for the next program.
        async def grow():
            async with Client(params, mode="2026-07-28") as c:
                await c.call_tool("execute", {"code": "return await tools.ts2026.grow({ name: 'sprout' })"})
                deadline = time.time() + 10
                while time.time() < deadline:
                    result = await c.call_tool("execute", {"code": "return Object.keys(tools.ts2026).includes('sprout') ? await tools.ts2026.sprout({}) : 'not yet'"})
                    if texts(result) != ["not yet"]:
                        return texts(result)
                    await anyio.sleep(0.2)
                return ["never"]

        grown = anyio.run(grow)
        check(grown == ["hello from sprout"], f"the server's change reached codemode (subscriptions/listen): {grown}")
    finally:
        http.kill()
        http.wait()
    # The same client against `codemode serve`.
    port = free_port()
    served = serve(config(tempfile.mkdtemp(prefix="codemode-2026-ts-serve-")), port)
    try:
        run = subprocess.run(["node", client, "http", f"http://127.0.0.1:{port}/mcp"], capture_output=True, text=True, timeout=120)
        check(run.returncode == 0 and '"ok":true' in run.stdout, f"the TypeScript strict client over HTTP: {run.stdout[-400:]} {run.stderr[-400:]}")
    finally:
        served.kill()
        served.wait()


async def main():
    folder = tempfile.mkdtemp(prefix="codemode-2026-")
    path = config(folder)
    await strict_session_checks(StdioServerParameters(command=CODEMODE, args=["mcp", "--config", path]), "stdio")
    port = free_port()
    server = serve(path, port)
    try:
        await strict_session_checks(f"http://127.0.0.1:{port}/mcp", "http")
    finally:
        server.kill()
        server.wait()
    await plugin_that_asks(tempfile.mkdtemp(prefix="codemode-2026-plugin-"))
    await behind_round_robin(tempfile.mkdtemp(prefix="codemode-2026-rr-"))
    replicas_by_hand(tempfile.mkdtemp(prefix="codemode-2026-replicas-"))


if __name__ == "__main__":
    anyio.run(main)
    if len(sys.argv) > 2:
        ts_sdk_checks(os.path.abspath(sys.argv[2]))
    print(f"MCP 2026-07-28: {harness.CHECKS} checks passed")
