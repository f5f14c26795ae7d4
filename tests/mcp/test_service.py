"""codemode as a service: stateless replicas, the operations endpoints, the JSON log.

Run by scripts/test-mcp-server.sh:

    python tests/mcp/test_service.py path/to/codemode

Two `codemode serve --stateless` replicas with `--ops-listen`, as a load balancer would
see them, and one in separate-tools mode. Checked:

- a plugin tool called directly (separate-tools mode) takes the same path as a
  program's call: an unavailable plugin says why and is tried again at the call,
  progress reaches the client, the input is checked, and `/metrics` counts the calls;

- the official MCP Python SDK's client works against a stateless replica (initialize,
  tools/list, execute), and bare JSON-RPC requests with no session, sent alternately to
  both replicas, are each answered on their own (no affinity needed);
- what needs a session is refused with a reason, never hung: a tool that needs approval
  (no elicitation without a session);
- `/healthz` lists every sandbox layer active and the live template, `/readyz` is 200,
  unknown paths 404, POST 405;
- `/metrics` is Prometheus text that counts programs by outcome kind, tool calls by
  plugin and outcome (a tool name the program made up is never a label), the
  program duration histogram, the warm pool, the template's memory and plugin restarts
  (a process plugin made to crash);
- SIGTERM: the replica stops being ready, answers the program it runs, then exits;
- `--log-format json`: one JSON event per program with its outcome, duration and tool
  calls; the program's text only on the replica started with `--log-program-text`.
"""

import json
import os
import re
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

import harness
from harness import CODEMODE, ROOT, check


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config():
    path = os.path.join(tempfile.mkdtemp(prefix="codemode-service-test-"), "codemode.toml")
    with open(path, "w") as f:
        f.write(f"""
example_tools = true

[[plugin]]
name = "js"
kind = "javascript"
path = "{ROOT}/tests/plugins/js-test"
require_approval = ["text"]

[[plugin]]
name = "proc"
kind = "process"
command = "python3"
args = ["{ROOT}/tests/plugins/test_plugin.py"]
""")
    return path


class Replica:
    def __init__(self, config, extra):
        self.port, self.ops = free_port(), free_port()
        self.log = tempfile.NamedTemporaryFile(prefix="codemode-replica-", suffix=".log", delete=False)
        env = dict(os.environ)
        env.pop("CODEMODE_TOKEN", None)
        self.process = subprocess.Popen(
            [CODEMODE, "serve", "--config", config, "--listen", f"127.0.0.1:{self.port}", "--stateless",
             "--ops-listen", f"127.0.0.1:{self.ops}", "--log", "warn,codemode::program=info", "--log-format", "json", *extra],
            stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        deadline = time.time() + 30
        while True:
            try:
                if get(self.ops_url("/readyz"))[0] == 200:
                    break
            except OSError:
                pass
            check(time.time() < deadline and self.process.poll() is None, f"replica on {self.port} became ready")
            time.sleep(0.1)

    def url(self):
        return f"http://127.0.0.1:{self.port}/mcp"

    def ops_url(self, path):
        return f"http://127.0.0.1:{self.ops}{path}"

    def events(self):
        events = []
        with open(self.log.name) as f:
            for line in f:
                line = line.strip()
                if line:
                    event = json.loads(line)
                    check(isinstance(event, dict) and "level" in event and "timestamp" in event, f"a JSON log line: {line}")
                    events.append(event)
        return [e for e in events if e.get("target") == "codemode::program"]

    def stop(self):
        self.process.terminate()
        self.process.wait(10)


def get(url, method="GET"):
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def rpc(replica, method, params, rid):
    """One JSON-RPC request with no session and no initialize: what a stateless replica
    must answer on its own."""
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
    request = urllib.request.Request(replica.url(), data=body, method="POST", headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18"})
    with urllib.request.urlopen(request, timeout=30) as response:
        check("mcp-session-id" not in {k.lower() for k in response.headers.keys()}, "a stateless answer opens no session")
        text = response.read().decode()
        kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        datas = [line[5:].strip() for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
        text = datas[-1]
    message = json.loads(text)
    check(message.get("id") == rid, f"the answer to request {rid}: {message}")
    return message


def execute(replica, code, rid):
    message = rpc(replica, "tools/call", {"name": "execute", "arguments": {"code": code}}, rid)
    result = message["result"]
    return result.get("isError", False), "".join(c.get("text", "") for c in result["content"])


def metric(text, name, labels=""):
    pattern = re.compile(r"^" + re.escape(name) + (r"\{" + re.escape(labels) + r"\}" if labels else r"") + r" (\S+)$", re.M)
    found = pattern.search(text)
    return float(found.group(1)) if found else None


async def sdk_client(replica):
    async with streamable_http_client(replica.url()) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            check(names == ["execute"], f"the SDK client lists the tools of a stateless replica: {names}")
            result = await session.call_tool("execute", {"code": "return await tools.math.add({ a: 2, b: 3 })"})
            check(not result.is_error and result.content[0].text == "5", f"the SDK client runs a program: {result}")


async def separate_tools_share_the_call_path(replica, ready):
    """A plugin tool called directly (separate-tools mode) goes the way a program's call
    does: an unavailable plugin is tried again at the call, progress reaches the client,
    and the call is counted in /metrics."""
    async with streamable_http_client(replica.url()) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            check("add" in names and "echo" not in names, f"the unavailable plugin's tools are not listed: {names}")
            # While it cannot start, the call says why, as a program's call would.
            result = await session.call_tool("echo", {"value": 1})
            why = result.content[0].text
            check(result.is_error and why.startswith("plugin flaky is unavailable: plugin flaky failed: "), f"why the plugin is unavailable: {why}")
            check("its last lines on stderr:\n  | flaky: not ready" in why, f"with its stderr: {why}")
            # Once it can start, a call tries it again and runs.
            open(ready, "w").close()
            progress = []

            async def on_progress(value, total, message):
                progress.append(message)

            deadline = time.time() + 20
            while True:
                result = await session.call_tool("echo", {"value": 7}, progress_callback=on_progress)
                if not result.is_error or time.time() > deadline:
                    break
                await anyio.sleep(0.1)
            check(not result.is_error and result.content[0].text == '{"value":7}', f"the call retried the plugin: {result}")
            with anyio.fail_after(5):
                while "tools.flaky.echo answered" not in progress:
                    await anyio.sleep(0.05)
            result = await session.call_tool("add", {"a": 2, "b": 3}, progress_callback=on_progress)
            check(result.content[0].text == "5", f"add: {result}")
            with anyio.fail_after(5):
                while "tools.math.add answered" not in progress:
                    await anyio.sleep(0.05)
            result = await session.call_tool("add", {"a": "two", "b": 3})
            check(result.is_error and result.content[0].text.startswith("invalid input for math.add: input.a: "), f"validation: {result}")
    status, text = get(replica.ops_url("/metrics"))
    check(metric(text, "codemode_tool_calls_total", 'plugin="flaky",outcome="ok"') == 1, f"the direct call is counted:\n{text}")
    check(metric(text, "codemode_tool_calls_total", 'plugin="math",outcome="ok"') == 1, f"the direct add is counted:\n{text}")
    check(metric(text, "codemode_tool_calls_total", 'plugin="math",outcome="rejected"') == 1, f"the invalid input is counted:\n{text}")
    check((metric(text, "codemode_tool_calls_total", 'plugin="unknown",outcome="rejected"') or 0) >= 1, f"the calls while unavailable are counted:\n{text}")


def separate_tools_config():
    """Separate-tools mode, with a process plugin that cannot start until a file exists."""
    folder = tempfile.mkdtemp(prefix="codemode-separate-test-")
    ready, script = os.path.join(folder, "ready"), os.path.join(folder, "flaky.sh")
    with open(script, "w") as f:
        f.write(f"#!/bin/sh\n[ -f '{ready}' ] || {{ echo 'flaky: not ready' >&2; exit 1; }}\nexec python3 '{ROOT}/tests/plugins/test_plugin.py'\n")
    os.chmod(script, 0o755)
    path = os.path.join(folder, "codemode.toml")
    with open(path, "w") as f:
        f.write(f"""example_tools = true

[server]
mode = "tools"

[[plugin]]
name = "flaky"
kind = "process"
command = "{script}"
""")
    return path, ready


def main():
    config, ready = separate_tools_config()
    separate = Replica(config, [])
    try:
        anyio.run(separate_tools_share_the_call_path, separate, ready)
    finally:
        separate.stop()
    config = write_config()
    a = Replica(config, ["--log-program-text"])
    b = Replica(config, [])
    try:
        anyio.run(sdk_client, a)
        # Any replica takes any request: alternate, with no session between them.
        listed = rpc(b, "tools/list", {}, 1)
        check([t["name"] for t in listed["result"]["tools"]] == ["execute"], f"tools/list on b: {listed}")
        for i in range(6):
            replica = (a, b)[i % 2]
            error, text = execute(replica, f"return await tools.math.add({{ a: {i}, b: 10 }})", 10 + i)
            check(not error and text == str(i + 10), f"request {i} on replica {'ab'[i % 2]}: {text}")
        # Outcomes of other kinds, and a tool name no plugin has.
        error, text = execute(b, "throw new TypeError('nope')", 20)
        check(error and "TypeError: nope" in text, f"a thrown error: {text}")
        error, text = execute(b, "return await tools.nosuch.tool({})", 21)
        check(error and "Unknown tool tools.nosuch.tool" in text, f"an unknown tool: {text}")
        error, text = execute(b, "return (await tools.js.echo({ value: 1 }))", 22)
        check(not error, f"a JavaScript plugin tool: {text}")
        # An approval needs a session to ask through: refused with the reason, at once.
        started = time.time()
        error, text = execute(b, "return await tools.js.text({ text: 'x' })", 23)
        check(error and "approval" in text and time.time() - started < 10, f"an approval without a session: {text}")
        # A process plugin made to crash is started again for the next call.
        error, text = execute(b, "try { await tools.proc.crash({}) } catch (e) { } return await tools.proc.echo({ value: 7 })", 24)
        check(not error and json.loads(text) == {"value": 7}, f"the crashed plugin answers again: {text}")

        status, body = get(b.ops_url("/healthz"))
        health = json.loads(body)
        check(status == 200 and health["status"] == "ok" and health["launch"] == "template", f"/healthz: {status} {body}")
        check(len(health["layers_active"]) == 16 and health["layers_missing"] == [] and "seccomp" in health["layers_active"], f"every layer active: {health}")
        check(os.path.exists(f"/proc/{health['template_pid']}"), "/healthz names the live template")
        check(get(b.ops_url("/readyz"))[0] == 200, "/readyz")
        check(get(b.ops_url("/nothing"))[0] == 404, "unknown paths are 404")
        check(get(b.ops_url("/metrics"), "POST")[0] == 405, "POST is 405")

        status, text = get(b.ops_url("/metrics"))
        check(status == 200 and "# TYPE codemode_programs_total counter" in text, f"/metrics is Prometheus text: {text[:300]}")
        ok_b = metric(text, "codemode_programs_total", 'outcome="ok"')
        check(ok_b == 5, f"b ran 5 programs that returned (tools/list is no program): {ok_b}\n{text}")
        check(metric(text, "codemode_programs_total", 'outcome="error"') == 3, f"3 errors on b:\n{text}")
        check(metric(text, "codemode_tool_calls_total", 'plugin="math",outcome="ok"') == 3, f"3 math calls on b:\n{text}")
        check('plugin="nosuch"' not in text, "a made-up plugin name is never a label")
        check(metric(text, "codemode_tool_calls_total", 'plugin="js",outcome="rejected"') == 1, f"the refused approval:\n{text}")
        check(metric(text, "codemode_plugin_restarts_total", 'plugin="proc"') == 1, f"the crashed plugin's restart:\n{text}")
        check(metric(text, "codemode_program_duration_seconds_count") == 8, f"8 durations on b:\n{text}")
        check(metric(text, "codemode_programs_running") == 0, "nothing running")
        check((metric(text, "codemode_warm_workers") or 0) >= 1, f"the warm pool:\n{text}")
        check((metric(text, "codemode_template_rss_bytes") or 0) > 1_000_000, f"the template's memory:\n{text}")

        # The program events: one per program, the text only where asked for.
        events_a, events_b = a.events(), b.events()
        check(len(events_a) == 4 and len(events_b) == 8, f"one event per program: {len(events_a)} on a, {len(events_b)} on b")
        outcomes = sorted(e["outcome"] for e in events_b)
        check(outcomes == ["error"] * 3 + ["ok"] * 5, f"outcome kinds in the log: {outcomes}")
        check(all(isinstance(e["duration_ms"], float) and "tool_calls" in e and "program" in e for e in events_b), f"fields: {events_b[0]}")
        check(all("code" not in e for e in events_b), "no program text by default")
        check(all("tools.math.add" in e.get("code", "") for e in events_a), f"the text on the replica asked for it: {events_a[0]}")
        check(all("nope" not in json.dumps(e) for e in events_b), "nothing of what a program returned or threw is logged")
        # SIGTERM, as an orchestrator stops a replica: not ready at once, the running
        # program still answered, then the process exits by itself.
        outcome = {}

        def slow():
            outcome["answer"] = execute(a, "return await tools.proc.slow({ ms: 1500 })", 30)

        import threading
        runner = threading.Thread(target=slow)
        runner.start()
        time.sleep(0.5)
        a.process.send_signal(15)
        time.sleep(0.3)
        check(get(a.ops_url("/readyz"))[0] == 503, "a stopping replica is not ready")
        runner.join(10)
        check(outcome.get("answer") == (False, "slept 1500"), f"the running program was answered: {outcome}")
        check(a.process.wait(10) == 0, "the replica exits by itself once drained")
    finally:
        for replica in (a, b):
            if replica.process.poll() is None:
                replica.stop()
    print(f"service: {harness.CHECKS} checks passed")


main()
