"""The hostile-work suite: attacks on the work the host does on a program's or a
plugin's behalf, run against the real `codemode` binary.

    python3 tests/hostile/run.py path/to/codemode [--report-only] [CASE ...]

Each case starts its own `codemode mcp` (or `codemode serve`), runs one attack, and
checks its named outcome; every case also reports the host's CPU time (its own
threads, workers excluded) and its peak RSS (`VmHWM`) and, where the attack runs
against `codemode serve`, the slowest `/healthz` answer seen while it ran. With
`--report-only` the figures are printed and nothing is asserted (for measuring a
binary from before a fix). Exits 1 when a check fails.

The cases are generated from a few parameters (sizes, counts, intervals), so the
same attack can be run larger by hand: see CASES at the end.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_raw import Http, Stdio, cpu_seconds, get, status_kib, texts  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
FLOOD = os.path.join(HERE, "flood_plugin.py")

REPORT_ONLY = "--report-only" in sys.argv
POSITIONAL = [a for a in sys.argv[1:] if not a.startswith("--")]
CODEMODE = os.path.abspath(POSITIONAL[0] if POSITIONAL else os.path.join(ROOT, "target/release/codemode"))
ONLY = POSITIONAL[1:]

FAILED = []
ROWS = []


def check(condition, what):
    if not condition:
        FAILED.append(what)
        print(f"  FAIL: {what}", flush=True)


def env(**extra):
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root")}
    base.update(extra)
    return base


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def mcp(folder, config, extra_args=(), environ=None, on_elicit=None):
    """`codemode mcp` on `config` (TOML text), initialized."""
    path = write(os.path.join(folder, "codemode.toml"), config)
    client = Stdio([CODEMODE, "mcp", "--config", path, *extra_args], env=environ or env(), on_elicit=on_elicit)
    answer = client.initialize(elicitation=on_elicit is not None)
    if "error" in answer:
        raise RuntimeError(f"initialize failed: {answer} {''.join(client.stderr)}")
    return client


class Serve:
    """`codemode serve` with its operations listener, and a thread timing `/healthz`."""

    def __init__(self, folder, config, environ=None):
        path = write(os.path.join(folder, "codemode.toml"), config)
        self.proc = subprocess.Popen(
            [CODEMODE, "serve", "--config", path, "--listen", "127.0.0.1:0", "--ops-listen", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=environ or env(),
        )
        self.pid = self.proc.pid
        self.url = self.ops = None
        for raw in self.proc.stderr:
            line = raw.decode()
            if "serving /healthz" in line:
                self.ops = line.split(" on ", 1)[1].split()[0]
            if "serving MCP on " in line:
                self.url = line.split("serving MCP on ", 1)[1].split()[0]
                break
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()
        self.slowest = 0.0
        self.health_failures = 0
        self.stop = threading.Event()
        threading.Thread(target=self._watch_health, daemon=True).start()

    def _watch_health(self):
        while not self.stop.is_set():
            try:
                status, _, seconds = get(self.ops + "/healthz", timeout=30)
                self.slowest = max(self.slowest, seconds)
                if status != 200:
                    self.health_failures += 1
            except OSError:
                self.health_failures += 1
                self.slowest = max(self.slowest, 30.0)
            time.sleep(0.02)

    def close(self):
        self.stop.set()
        self.proc.kill()
        self.proc.wait()


def measured(name, pid, started_cpu, run, healthz=None):
    """Runs `run()`, then records the host's CPU, peak RSS and the elapsed time."""
    t0 = time.monotonic()
    detail = run()
    elapsed = time.monotonic() - t0
    cpu = cpu_seconds(pid) - started_cpu
    peak = status_kib(pid, "VmHWM") / 1024
    ROWS.append((name, cpu, peak, elapsed, healthz() if healthz else None, detail))
    print(
        f"  {name}: host CPU {cpu:.2f} s, peak RSS {peak:.0f} MiB, {elapsed:.2f} s"
        + (f", slowest /healthz {healthz() * 1000:.0f} ms" if healthz else "")
        + f"; {detail}",
        flush=True,
    )
    return cpu, peak, elapsed


# ----------------------------------------------------------------------------- cases


def case_random(folder):
    """Programs in a row and at once, warm and fresh workers, never share a sequence."""
    client = mcp(folder, "example_tools = true\n")
    program = "return Array.from({ length: 4 }, () => Math.random())"
    fresh = "return [Math.random(), Math.random(), Math.random(), Math.random()] // fresh"
    sequences = []

    def run():
        for _ in range(4):
            sequences.append(texts(client.execute(program))[0])
        results = [None] * 12
        threads = []
        for i in range(12):

            def one(i=i):
                results[i] = texts(client.execute(program if i % 2 else fresh))[0]

            threads.append(threading.Thread(target=one))
            threads[-1].start()
        for t in threads:
            t.join()
        sequences.extend(results)
        return f"{len(set(sequences))} distinct sequences of {len(sequences)}"

    measured("random", client.pid, cpu_seconds(client.pid), run)
    check(all(s.startswith("[") for s in sequences), f"every program returned its numbers: {sequences[:2]}")
    check(len(set(sequences)) == len(sequences), f"no two programs share a Math.random sequence: {sequences[:4]}")
    # Programs with limits other than the defaults run in a fresh fork of their own.
    limited = mcp(os.path.join(folder, "limited"), "example_tools = true\n[limits]\nmemory_mib = 200\n")
    others = [texts(limited.execute(program))[0] for _ in range(3)]
    limited.close()
    check(len(set(others + sequences)) == len(others) + len(sequences), "fresh workers for other limits differ too")
    client.close()


def search_program(words):
    return (
        f"const q = Array.from({{ length: {words} }}, (_, i) => 'w' + i.toString(36) + 'q').join(' ');\n"
        "const t = Date.now();\n"
        "try { const hits = await tools.$search(q); return { ok: hits.length, ms: Date.now() - t }; }\n"
        "catch (e) { return { error: e.message.slice(0, 300), ms: Date.now() - t }; }"
    )


def case_search(folder):
    """A huge query is refused at once; a program searching at its limits ends at them."""
    client = mcp(folder, "example_tools = true\n[limits]\nwall_clock_ms = 2000\ntool_calls = 10000000\n")
    answer = {}

    def run():
        answer["huge"] = client.execute(search_program(80_000), timeout=60)
        return texts(answer["huge"])[0][:160]

    cpu, _, elapsed = measured("search: 80,000 words", client.pid, cpu_seconds(client.pid), run)
    check(elapsed < 3.0, f"the huge query ended within the 2 s wall clock (+1 s): {elapsed:.1f} s")
    check(cpu < 0.5, f"the huge query cost the host under 0.5 s of CPU: {cpu:.2f} s")
    check("at most" in texts(answer["huge"])[0], f"the huge query is refused with its limit: {texts(answer['huge'])}")

    # Searching in a loop, each query within the caps: the program ends at its wall clock.
    loop = (
        "const q = Array.from({ length: 64 }, (_, i) => 'word' + i).join(' ');\n"
        "for (;;) await tools.$search(q);"
    )

    def run_loop():
        answer["loop"] = client.execute(loop, timeout=60)
        return texts(answer["loop"])[0][:120]

    cpu, _, elapsed = measured("search: a loop at the wall clock", client.pid, cpu_seconds(client.pid), run_loop)
    check(answer["loop"]["result"].get("isError"), "the searching loop is a failed result")
    check("wall-clock" in texts(answer["loop"])[0].lower(), f"it ends at the wall clock: {texts(answer['loop'])}")
    check(elapsed < 2.6, f"and within it: {elapsed:.1f} s")
    client.close()

    # With a small budget of host CPU, the loop is told when its searches used it up.
    budget = mcp(os.path.join(folder, "budget"), "example_tools = true\n[limits]\nhost_cpu_ms = 100\ntool_calls = 10000000\n")

    def run_budget():
        answer["budget"] = budget.execute(
            "const q = Array.from({ length: 64 }, (_, i) => 'word' + i).join(' ');\n"
            "let n = 0; try { for (;;) { await tools.$search(q); n++; } } catch (e) { return { n, why: e.message }; }",
            timeout=60,
        )
        return texts(answer["budget"])[0][:160]

    cpu, _, _ = measured("search: a loop with 100 ms of host CPU", budget.pid, cpu_seconds(budget.pid), run_budget)
    check(texts(answer["budget"])[0].startswith("Host CPU limit: the host spent more than 100 ms"), f"the program ends at its host CPU limit: {texts(answer['budget'])}")
    # Searches at once are taken one at a time: the limit holds for them too.
    many = budget.execute(
        "const q = Array.from({ length: 64 }, (_, i) => 'word' + i).join(' ');\n"
        "await Promise.all(Array.from({ length: 4000 }, () => tools.$search(q))); return 'all answered';",
        timeout=60,
    )
    check(texts(many)[0].startswith("Host CPU limit"), f"4,000 searches at once end at the limit too: {texts(many)[0][:200]}")
    check(cpu < 1.0, f"and the host's CPU stayed near the budget: {cpu:.2f} s")
    budget.close()


def case_healthz(folder):
    """Host work of programs never delays /healthz."""
    server = Serve(folder, "example_tools = true\n[limits]\nwall_clock_ms = 5000\n")
    results = []

    media = "return Array.from({ length: 60000 }, () => ({ type: 'image', data: '', mimeType: 'a' }))"

    def attack(code):
        http = Http(server.url)
        http.initialize()
        results.append(texts(http.execute(code, timeout=60))[0][:100])

    def run():
        codes = [search_program(80_000), search_program(80_000), media, media]
        threads = [threading.Thread(target=attack, args=(code,)) for code in codes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(0.3)
        return "; ".join(results)

    measured("healthz: two searching and two media programs", server.pid, cpu_seconds(server.pid), run, lambda: server.slowest)
    check(server.slowest < 0.1, f"/healthz always answered within 100 ms: slowest {server.slowest * 1000:.0f} ms")
    check(server.health_failures == 0, f"/healthz never failed: {server.health_failures}")
    server.close()


def case_media(folder):
    """Many returned media items stay within the output cap, at linear cost."""
    client = mcp(folder, "example_tools = true\n[server]\noutput_bytes = 65536\n")
    answer = {}

    def run():
        answer["a"] = client.execute(
            "return Array.from({ length: 60000 }, () => ({ type: 'image', data: '', mimeType: 'a' }))", timeout=120
        )
        return f"{answer['a']['_bytes']} bytes answered"

    cpu, peak, _ = measured("media: 60,000 empty images", client.pid, cpu_seconds(client.pid), run)
    check(peak < 200, f"the host's peak RSS stayed under 200 MiB: {peak:.0f} MiB")
    content = answer["a"]["result"]["content"]
    delivered = sum(len(c.get("text", "")) + len(c.get("data", "")) + 64 for c in content)
    check(delivered <= 2 * 65536, f"what the agent gets stays near the 64 KiB cap: {delivered} bytes in {len(content)} items")
    check(cpu < 1.0, f"the host spent under 1 s of CPU on it: {cpu:.2f} s")
    check(any("left out" in c.get("text", "") for c in content), "the answer says what was left out")
    client.close()


DEEP_MODULES = {
    "400,000 !": "export default { id: 'deep', server: () => " + "!" * 400_000 + "1 };\n",
    "300,000 a?1:": "export default { id: 'deep', server: () => " + "a?1:" * 300_000 + "1 };\n",
    "300,000 x=>": "export default { id: 'deep', server: " + "x=>" * 300_000 + "1 };\n",
}


def case_module(folder):
    """A plugin module nested past any stack is unavailable; the other plugins work."""
    for label, text in DEEP_MODULES.items():
        sub = os.path.join(folder, label.replace(",", "").replace(" ", "_").replace("?", "q").replace(":", "c").replace("=>", "arrow"))
        write(os.path.join(sub, "deep.js"), text)
        config = write(
            os.path.join(sub, "codemode.toml"),
            'example_tools = true\n\n[[plugin]]\nname = "deep"\nkind = "javascript"\npath = "deep.js"\n',
        )
        t0 = time.monotonic()
        tools = subprocess.run([CODEMODE, "tools", "--config", config], capture_output=True, text=True, env=env())
        elapsed = time.monotonic() - t0
        said = (tools.stdout + tools.stderr).strip().splitlines()
        ROWS.append((f"module: {label} (codemode tools)", None, None, elapsed, None, f"exit {tools.returncode}"))
        print(f"  module {label}: codemode tools exit {tools.returncode} in {elapsed:.2f} s; {said[-1][:200] if said else ''}", flush=True)
        # Exit 1: the listing names an unavailable plugin (a crash would be a signal).
        check(tools.returncode == 1, f"codemode tools survives {label} and says a plugin is unavailable: exit {tools.returncode}")
        check("tools.math.add" in tools.stdout, f"the other plugins are listed ({label})")
        check("stack overflow" not in tools.stderr, f"no stack overflow for {label}")
        check("deep" in tools.stdout + tools.stderr and "unavailable" in tools.stdout + tools.stderr, f"the plugin is named unavailable ({label}): {said[-3:]}")
        if label.startswith("400"):
            client = Stdio([CODEMODE, "mcp", "--config", config], env=env())
            if "error" in client.initialize():
                check(False, f"codemode mcp serves with the plugin ({label}): {''.join(client.stderr)[-300:]}")
                continue
            ok = texts(client.execute("return await tools.math.add({ a: 2, b: 3 })"))
            deep = texts(client.execute("try { await tools.deep.x({}) } catch (e) { return e.message }"))
            check(ok == ["5"], f"the other tools work: {ok}")
            check("unavailable" in deep[0], f"calls to the plugin say it is unavailable: {deep}")
            ROWS.append((f"module: {label} (codemode mcp)", cpu_seconds(client.pid), status_kib(client.pid, "VmHWM") / 1024, None, None, deep[0][:120]))
            client.close()


FLOOD_JS = """export function activate(api) {
  api.tools.register({ name: "steady", description: "Always there.", run: () => "ok" });
  // A new name every tick (not one tool coming and going, which a re-list once a
  // second can see in the same state every time).
  let handle = null, n = 0;
  setInterval(() => {
    if (handle) handle.remove();
    handle = api.tools.register({ name: `flicker_${++n}`, description: "Changes.", run: () => "ok" });
  }, %d);
}
"""


def case_changes(folder, seconds=10):
    """Floods of tools.changed are coalesced: only the changing plugin is asked again,
    at most once per interval, and each client hears at most one list_changed per
    interval."""
    for kind in ("javascript", "process"):
        sub = os.path.join(folder, kind)
        count = os.path.join(sub, "lists")
        write(count, "")
        write(
            os.path.join(sub, "flicker", "manifest.json"),
            '{ "name": "flicker", "version": "1", "main": "main.js", "permissions": { "tools.provide": {} } }',
        )
        write(os.path.join(sub, "flicker", "main.js"), FLOOD_JS % 5)
        flooder = (
            '[[plugin]]\nname = "flicker"\nkind = "javascript"\npath = "flicker"\n'
            if kind == "javascript"
            else f'[[plugin]]\nname = "flicker"\nkind = "process"\ncommand = "python3"\nargs = ["{FLOOD}", "--flood-ms", "1"]\n'
        )
        config = (
            "example_tools = true\n\n"
            + flooder
            + f'\n[[plugin]]\nname = "bystander"\nkind = "process"\ncommand = "python3"\nargs = ["{FLOOD}", "--count", "{count}"]\n'
        )
        client = mcp(sub, config)
        before = len(open(count).read().splitlines())
        started = cpu_seconds(client.pid)

        def run():
            time.sleep(seconds)
            return ""

        measured(f"changes: a {kind} plugin flooding for {seconds} s", client.pid, started, run)
        relists = len(open(count).read().splitlines()) - before
        notices = sum(1 for _, m, _ in client.notifications if m == "notifications/tools/list_changed")
        ROWS[-1] = ROWS[-1][:5] + (f"{relists} tools/list to the other plugin, {notices} list_changed to the client",)
        print(f"    {relists} tools/list to the other plugin, {notices} list_changed to the client", flush=True)
        check(relists == 0, f"the other plugin is not asked again ({kind}): {relists}")
        check(notices <= seconds + 2, f"at most one list_changed a second ({kind}): {notices} in {seconds} s")
        check(notices >= 1, f"the changes are still announced ({kind})")
        listed = client.request("tools/list")
        check("execute" in json.dumps(listed), "the server still lists its tools")
        client.close()


def case_biglist(folder):
    """A 13 MiB tool list read by 20 clients at once keeps the host's memory bounded."""
    config = (
        "[server]\nmode = \"tools\"\n\n"
        f'[[plugin]]\nname = "big"\nkind = "process"\ncommand = "python3"\nargs = ["{FLOOD}", "--tools", "1200", "--tool-bytes", "11000"]\n'
    )
    client = mcp(folder, config)
    baseline = status_kib(client.pid, "VmHWM") / 1024
    lists = []

    def whole_list():
        tools, pages, largest, cursor = 0, 0, 0, None
        while True:
            answer = client.request("tools/list", {"cursor": cursor} if cursor else {}, timeout=300)
            pages += 1
            largest = max(largest, answer["_bytes"])
            if "result" not in answer:
                return f"page {pages} refused: {answer.get('error')}", pages, largest
            tools += len(answer["result"]["tools"])
            cursor = answer["result"].get("nextCursor")
            if not cursor:
                return tools, pages, largest

    def run():
        threads = []
        for _ in range(20):
            threads.append(threading.Thread(target=lambda: lists.append(whole_list())))
            threads[-1].start()
        for t in threads:
            t.join()
        tools, pages, largest = lists[0]
        return f"20 lists of {tools} tools in {pages} pages of at most {largest / 1048576:.1f} MiB; RSS before {baseline:.0f} MiB"

    _, peak, _ = measured("tool list: 1,200 tools (13 MiB), 20 clients at once", client.pid, cpu_seconds(client.pid), run)
    check(len(lists) == 20 and all(tools == 1200 for tools, _, _ in lists), f"every client read every tool: {lists[:3]}")
    check(all(largest <= 2.2 * 1048576 for _, _, largest in lists), f"no answer holds more than a page: {lists[:3]}")
    check(peak - baseline < 100, f"20 clients reading it add under 100 MiB: {peak - baseline:.0f} MiB")
    client.close()


def token_file_name(url):
    import hashlib
    import urllib.parse

    host = urllib.parse.urlparse(url).hostname or ""
    readable = "".join(c for c in host if c.isalnum() or c in ".-")[:64].lstrip(".-")
    return f"{readable or 'server'}-{hashlib.sha256(url.encode()).hexdigest()[:16]}.json"


def case_oauth(folder):
    """A damaged token file never shows its tokens."""
    url = "http://127.0.0.1:9/mcp"
    secret = "SECRET-ACCESS-TOKEN-4f1c"
    refresh = "SECRET-REFRESH-TOKEN-9a2b"
    data = os.path.join(folder, "data")
    oauth = os.path.join(data, "codemode", "oauth")
    damaged = {
        "token_response": {"server": url, "credentials": {"client_id": "c", "token_response": f"{secret} {refresh}"}},
        "credentials": {"server": url, "credentials": f"{secret} {refresh}"},
    }
    config = f'[[plugin]]\nname = "remote"\nkind = "mcp"\nurl = "{url}"\n'
    for field, content in damaged.items():
        os.makedirs(oauth, mode=0o700, exist_ok=True)
        write(os.path.join(oauth, token_file_name(url)), json.dumps(content))
        environ = env(XDG_DATA_HOME=data)
        client = mcp(os.path.join(folder, field), config, environ=environ)
        said = texts(client.execute("try { await tools.remote.anything({}) } catch (e) { return e.message }"))
        client.close()
        status = subprocess.run(
            [CODEMODE, "auth", "status", "--config", os.path.join(folder, field, "codemode.toml")],
            capture_output=True,
            text=True,
            env=environ,
        )
        everything = " ".join(said) + "".join(client.stderr) + status.stdout + status.stderr
        leaked = secret in everything or refresh in everything
        ROWS.append((f"oauth: damaged {field}", None, None, None, None, "tokens shown" if leaked else "tokens kept"))
        print(f"  oauth damaged {field}: {'LEAKED' if leaked else 'kept'}; {said[0][:160]}", flush=True)
        check(not leaked, f"a damaged {field} never shows the tokens: {everything[:400]}")
        check("damaged" in everything and field in everything, f"the error names the field ({field}): {said[0][:300]}")


def case_environ(folder):
    """A plugin running as the host's user cannot read the host's environment."""
    config = f'[[plugin]]\nname = "snoop"\nkind = "process"\ncommand = "python3"\nargs = ["{FLOOD}"]\n'
    client = mcp(folder, config, environ=env(CODEMODE_TOKEN="host-secret-token"))
    said = texts(client.execute("return await tools.snoop.environ({})"))
    client.close()
    ROWS.append(("environ: plugin reads /proc/<host>/environ", None, None, None, None, said[0][:100]))
    print(f"  environ: {said[0][:200]}", flush=True)
    check('"readable": false' in said[0], f"the host's environment is not readable: {said[0][:200]}")


def case_approval(folder):
    """The approval question shows every field and no invisible controls."""
    asked = []

    def on_elicit(params):
        asked.append(params.get("message", ""))
        return {"action": "decline"}

    config = f'[[plugin]]\nname = "ops"\nkind = "process"\ncommand = "python3"\nargs = ["{FLOOD}"]\nrequire_approval = ["echo"]\n'
    client = mcp(folder, config, on_elicit=on_elicit)
    program = "return await tools.ops.echo({ pad: 'x'.repeat(6000), command: 'rm -rf /srv/data', note: 'safe\\u202Etxt.exe\\u200B' }).catch((e) => e.message)"
    said = texts(client.execute(program))
    client.close()
    message = asked[0] if asked else ""
    ROWS.append(("approval: padded input with bidi controls", None, None, None, None, f"question of {len(message)} chars"))
    print(f"  approval: asked {len(asked)}; {said[0][:100]}", flush=True)
    check(asked, "the person was asked")
    check("rm -rf /srv/data" in message, "the field after the padding is shown")
    check("\u202e" not in message and "\u200b" not in message, "bidi and invisible controls are escaped")
    check("u202e" in message.lower(), "and shown as escapes")


def case_alias(folder):
    """An unavailable plugin called through its _ alias says it is unavailable."""
    config = '[[plugin]]\nname = "my-db"\nkind = "process"\ncommand = "/nonexistent/db-plugin"\n'
    client = mcp(folder, config)
    said = texts(client.execute("try { await tools.my_db.query({}) } catch (e) { return e.message }"))
    client.close()
    ROWS.append(("alias of an unavailable plugin", None, None, None, None, said[0][:100]))
    print(f"  alias: {said[0][:200]}", flush=True)
    check("my-db is unavailable" in said[0], f"the alias reaches the real plugin: {said[0][:200]}")


def case_cause(folder):
    """An error with a deep cause chain is described at once."""
    client = mcp(folder, "example_tools = true\n")
    answer = {}

    def run():
        answer["a"] = client.execute(
            "let e = new Error('root'); for (let i = 0; i < 100000; i++) e = new Error('level ' + i, { cause: e }); throw e;"
        )
        return texts(answer["a"])[0][:100]

    _, _, elapsed = measured("cause: 100,000 causes", client.pid, cpu_seconds(client.pid), run)
    text = texts(answer["a"])[0]
    check(text.startswith("Error") or "Error: level" in text, f"it ends as the error: {text[:200]}")
    check(elapsed < 1.5, f"at once: {elapsed:.2f} s")
    client.close()


def case_calls(folder):
    """50,000 tool calls: the host's work for them is bounded by the program's limits."""
    client = mcp(folder, "example_tools = true\n")
    answer = {}

    def run():
        answer["a"] = client.execute(
            "let n = 0; for (let i = 0; i < 50000; i++) { try { await tools.math.add({ a: i, b: 1 }); n++; } catch (e) {} } return { n };",
            timeout=300,
        )
        return texts(answer["a"])[0][:160]

    cpu, _, _ = measured("calls: 50,000 in a row", client.pid, cpu_seconds(client.pid), run)
    check(texts(answer["a"])[0].startswith("Tool-call limit: the program made more than 10000 tool calls"), f"the program ends at its tool-call limit: {texts(answer['a'])[0][:200]}")
    check(cpu < 2.0, f"the host's CPU for one program's calls stays under 2 s: {cpu:.2f} s")
    client.close()


def case_sessions(folder):
    """One MCP session cannot hold every program slot."""
    config = f'[server]\nmax_concurrent_programs = 4\n\n[[plugin]]\nname = "slow"\nkind = "process"\ncommand = "python3"\nargs = ["{FLOOD}"]\n'
    server = Serve(folder, config)
    hog = Http(server.url)
    hog.initialize()
    threads = [threading.Thread(target=lambda: hog.execute("return await tools.slow.slow({ ms: 4000 })")) for _ in range(6)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    other = Http(server.url)
    other.initialize()
    t0 = time.monotonic()
    said = texts(other.execute("return 'served'"))
    waited = time.monotonic() - t0
    for t in threads:
        t.join()
    server.close()
    ROWS.append(("sessions: one session holds 6 slow programs", None, None, waited, None, said[0]))
    print(f"  sessions: the other session waited {waited:.2f} s: {said}", flush=True)
    check(said == ['"served"'] or said == ["served"], f"the other session is served: {said}")
    check(waited < 2.0, f"without waiting for the first session's programs: {waited:.2f} s")


# Programs that grow their worker's memory without end, each in a different place: the
# engine's heap (arrays, maps), backing stores (typed arrays, touched or not) and large
# strings.
MEMORY_HOGS = {
    "typed arrays, filled": "const k = []; for (;;) k.push(new Uint8Array(4 << 20).fill(7));",
    "typed arrays, untouched": "const k = []; for (;;) k.push(new Uint8Array(4 << 20));",
    "strings": "const k = []; for (let i = 0;; i++) k.push('y'.repeat(1 << 22) + i);",
    "arrays": "const k = []; for (;;) k.push(new Array(1 << 16).fill(k.length));",
    "maps": "const m = new Map(); for (let i = 0;; i++) m.set(i, { i, s: 'v' + i });",
    "typed arrays, then small objects": "const k = []; for (let i = 0; i < 15; i++) k.push(new Uint8Array(4 << 20).fill(1)); const m = new Map(); for (let i = 0;; i++) m.set(i, { i });",
}


def peak_rss_summary(server, at_least):
    """The largest worker peak RSS (bytes) the host recorded, once `at_least` workers were reaped."""
    deadline = time.monotonic() + 15
    while True:
        _, body, _ = get(server.ops + "/metrics")
        count, peak = 0, None
        for line in body.decode().splitlines():
            if line.startswith("codemode_worker_peak_rss_bytes_count"):
                count = int(float(line.split()[-1]))
            if line.startswith('codemode_worker_peak_rss_bytes{quantile="1"}'):
                peak = float(line.split()[-1])
        if (count >= at_least and peak is not None) or time.monotonic() > deadline:
            return peak or 0.0, count
        time.sleep(0.2)


def case_memory(folder, limit_mib=64, in_flight=8):
    """A program's worker holds at most its memory limit (+10%) above a trivial worker."""
    config = f"[limits]\nmemory_mib = {limit_mib}\nwall_clock_ms = 30000\n[server]\nmax_concurrent_programs = {in_flight}\n"

    def run_all(server, code):
        said = []

        def one():
            http = Http(server.url)
            http.initialize()
            said.append(texts(http.execute(code, timeout=60)))

        threads = [threading.Thread(target=one) for _ in range(in_flight)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return said

    server = Serve(os.path.join(folder, "trivial"), config)
    run_all(server, "return 1")
    trivial, _ = peak_rss_summary(server, in_flight)
    server.close()
    bound = trivial + 1.1 * limit_mib * 1024 * 1024
    print(f"  a trivial worker peaks at {trivial / 2**20:.1f} MiB; the bound is {bound / 2**20:.1f} MiB", flush=True)
    for label, code in MEMORY_HOGS.items():
        server = Serve(os.path.join(folder, label.replace(" ", "-").replace(",", "")), config)
        t0 = time.monotonic()
        said = run_all(server, code)
        elapsed = time.monotonic() - t0
        peak, count = peak_rss_summary(server, in_flight)
        server.close()
        ended = sorted({"memory_limit" if "Memory limit" in " ".join(s) else " ".join(s)[:80] for s in said})
        detail = f"worker peak {peak / 2**20:.1f} MiB (trivial {trivial / 2**20:.1f}, bound {bound / 2**20:.1f}); {ended}"
        ROWS.append((f"memory: {label}, {in_flight} at once, {limit_mib} MiB", None, None, elapsed, None, detail))
        print(f"  {label}: {detail}", flush=True)
        check(ended == ["memory_limit"], f"memory ({label}): every program ends at the memory limit: {ended}")
        check(count >= in_flight, f"memory ({label}): every worker's peak was recorded: {count}")
        check(trivial > 0 and peak <= bound, f"memory ({label}): peak {peak / 2**20:.1f} MiB within {bound / 2**20:.1f} MiB")


def case_trickle(folder, body_bytes=100):
    """A request body trickled at 1 byte/s is cut off at the body deadline."""
    import socket
    import urllib.parse

    server = Serve(folder, "example_tools = true\n")
    url = urllib.parse.urlparse(server.url)
    sock = socket.create_connection((url.hostname, url.port), timeout=60)
    sock.sendall(
        (
            f"POST {url.path} HTTP/1.1\r\nHost: {url.hostname}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {body_bytes}\r\n\r\n"
        ).encode()
    )
    t0 = time.monotonic()
    answer = b""
    sock.settimeout(1.0)
    sent = 0
    while time.monotonic() - t0 < 45:
        try:
            if sent < body_bytes - 1:
                sock.sendall(b" ")
                sent += 1
        except OSError:
            break
        try:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
        except socket.timeout:
            continue
        except OSError:
            break
    closed_after = time.monotonic() - t0
    sock.close()
    status = answer.split(b"\r\n", 1)[0].decode(errors="replace")
    server.close()
    detail = f"{status or 'closed'} after {closed_after:.1f} s ({sent} bytes sent)"
    ROWS.append(("trickle: a body at 1 byte/s", None, None, closed_after, server.slowest, detail))
    print(f"  trickle: {detail}", flush=True)
    check(status in ("", "HTTP/1.1 408 Request Timeout"), f"trickle: answered 408 or closed: {status}")
    check(closed_after < 40, f"trickle: cut off at the 30 s body deadline: {closed_after:.1f} s")


def case_agent_names(folder, requests=600, name_bytes=512 << 10):
    """600 requests each naming a different 512 KiB agent in `_meta`: nothing is kept."""
    client = mcp(folder, "example_tools = true\n")
    before = status_kib(client.pid, "VmRSS") / 1024
    said = {}

    def run():
        for i in range(requests):
            name = f"{i:06d}" + "a" * (name_bytes - 6)
            answer = client.request("tools/call", {"name": "execute", "arguments": {"code": "return 1"}, "_meta": {"codemode/agent": name}})
            said.setdefault(texts(answer)[0][:120], 0)
            said[texts(answer)[0][:120]] += 1
        said["next"] = texts(client.execute("return 'served'"))
        unknown = sum(n for k, n in said.items() if k != "next" and "selects agent" in k)
        return f"{unknown} of {requests} refused as unknown agents; the next request: {said['next']}"

    measured(f"agent names: {requests} x {name_bytes >> 10} KiB in _meta", client.pid, cpu_seconds(client.pid), run)
    grown = status_kib(client.pid, "VmRSS") / 1024 - before
    print(f"  agent names: host RSS grew {grown:.0f} MiB", flush=True)
    refused = [k for k in said if k.startswith('the request\'s _meta "codemode/agent" selects agent "0')]
    check(sum(said[k] for k in refused) == requests, f"every unknown agent is refused: {list(said)[:3]}")
    check(said["next"] in (['"served"'], ["served"]), f"the host answers the next request: {said['next']}")
    check(grown <= 64, f"host RSS grows by at most 64 MiB: {grown:.0f} MiB")
    client.close()


def case_sampling(folder, questions=300, question_bytes=1 << 20):
    """300 questions of 1 MiB to a client's model that never answers: bounded."""
    plugin = os.path.join(HERE, "big_questions.ts")
    path = write(os.path.join(folder, "codemode.toml"), f'[limits]\nwall_clock_ms = 60000\n\n[[plugin]]\nname = "big"\nkind = "javascript"\npath = "{plugin}"\ntimeout_ms = 10000\nmemory_mib = 1024\n')
    client = Stdio([CODEMODE, "mcp", "--config", path], env=env(), unanswered={"sampling/createMessage"})
    client.initialize(sampling=True)
    before = status_kib(client.pid, "VmRSS") / 1024
    # The program ends once every refused question has settled, leaving the asked ones waiting.
    program = f"""let refused = 0, reason = null, done;
        const all = new Promise((resolve) => (done = resolve));
        for (let i = 0; i < {questions}; i++) tools.big.ask_big({{ bytes: {question_bytes} }}).catch((e) => {{ refused++; reason = e.message; if (refused === {questions} - 8) done(); }});
        await all; return {{ refused, reason }};"""
    said = {}

    def run():
        t0 = time.monotonic()
        said["a"] = client.execute(program, timeout=90)
        said["rss"] = status_kib(client.pid, "VmRSS") / 1024 - before
        t1 = time.monotonic()
        said["next"] = texts(client.execute("return 'served'"))
        return f"{texts(said['a'])[0][:100]}; asked {len(client.held)}; the program took {t1 - t0:.2f} s, the next one {time.monotonic() - t1:.2f} s"

    measured(f"sampling: {questions} x {question_bytes >> 10} KiB unanswered", client.pid, cpu_seconds(client.pid), run)
    got = json.loads(texts(said["a"])[0])
    check(got["refused"] == questions - 8 and "this program has 8 questions waiting for the client's model already" in got["reason"], f"questions past the bound are refused: {got}")
    check(len(client.held) == 8, f"the client was asked 8 questions: {len(client.held)}")
    check(said["rss"] <= 64, f"host RSS grew by at most 64 MiB while they waited: {said['rss']:.0f} MiB")
    check(said["next"] in (['"served"'], ["served"]), f"the host answers the next request: {said['next']}")
    client.close()


def case_journal(folder, calls=60, change_bytes=2 << 20, named=4, names_per_call=50, name_chars=100_000):
    """60 calls each recording a 2 MiB change, then 4 x 50 changes to files with
    100,000-character names: the journal stays within the program's tool-data budget
    (32 MiB) and the answer within `output_bytes`."""
    notes = os.path.join(ROOT, "target/formats/podcode/notes.mjs")
    if not os.path.exists(notes):
        print("  target/formats is not installed (scripts/npm-fixtures.sh): skipped", flush=True)
        return
    client = mcp(folder, f'[server]\noutput_bytes = 65536\n\n[[plugin]]\nname = "notes"\nkind = "javascript"\npath = "{notes}"\n')
    before = status_kib(client.pid, "VmRSS") / 1024
    said = {}

    def run():
        code = f"for (let i = 0; i < {calls}; i++) await tools.notes.rewrite({{ name: `big${{i}}/`, bytes: {change_bytes} }}); return 'done'"
        said["big"] = client.execute(code, timeout=120)
        said["rss"] = status_kib(client.pid, "VmRSS") / 1024 - before
        code = f"for (let i = 0; i < {named}; i++) await tools.notes.rewrite({{ name: `${{i}}` + 'n'.repeat({name_chars}), bytes: 1, count: {names_per_call} }}); return 'done'"
        said["named"] = client.execute(code, timeout=120)
        said["next"] = texts(client.execute("return 'served'"))
        return f"answers of {len(json.dumps(said['big']))} and {len(json.dumps(said['named']))} bytes"

    measured(f"journal: {calls} x {change_bytes >> 20} MiB changes, {named} x {names_per_call} long names", client.pid, cpu_seconds(client.pid), run)
    big = said["big"]["result"]
    meta = big.get("_meta", {})
    kept = [c for c in meta.get("codemode/changes", []) if c.get("newContent")]
    check(texts(said["big"])[0] == "done" and texts(said["big"])[1].startswith(f"Changes recorded by tools ({calls}):"), f"every change is listed: {[t[:80] for t in texts(said['big'])]}")
    check(len(json.dumps(said["big"])) <= 65536 + 1024, f"the answer within output_bytes: {len(json.dumps(said['big']))} bytes")
    check(not kept and len(meta.get("codemode/changes", [])) == calls and all(c.get("contentsLeftOut") for c in meta["codemode/changes"]), f"the _meta journal names each change without its contents: {str(meta)[:300]}")
    check(said["rss"] <= 100, f"host RSS grew by at most 100 MiB (budget 32 MiB): {said['rss']:.0f} MiB")
    named_size = len(json.dumps(said["named"]))
    check(named_size <= 65536 + 1024, f"the long-names answer within output_bytes: {named_size} bytes")
    check(said["named"]["result"].get("_meta", {}).get("codemode/changesLeftOut", 0) > 0, f"the _meta says how many changes it leaves out: {str(said['named'])[:300]}")
    check(said["next"] in (['"served"'], ["served"]), f"the host answers the next request: {said['next']}")
    client.close()


def post_2026(url, code, state=None, capabilities=None):
    """One 2026-07-28 `tools/call execute` over HTTP (no session): its JSON-RPC answer and its size."""
    import urllib.request

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": {"name": "hostile", "version": "1"},
    }
    params = {"name": "execute", "arguments": {"code": code}, "_meta": meta}
    if state:
        params["requestState"] = state
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()
    request = urllib.request.Request(url, data=body, method="POST")
    for key, value in {"content-type": "application/json", "accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "execute"}.items():
        request.add_header(key, value)
    with urllib.request.urlopen(request, timeout=120) as response:
        text = response.read().decode()
    for line in [text] + [l[5:] for l in text.splitlines() if l.startswith("data:")]:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if "result" in message or "error" in message:
            return message, len(line)
    raise AssertionError(f"no JSON-RPC answer in {text[:300]}")


def case_artifacts(folder, sessions=12, per_session=4, mib=8):
    """12 sessions each writing 4 artifacts of 8 MiB (their session's 32 MiB): all of them
    together hold at most the server's 256 MiB, and a 2026-07-28 answer embeds artifacts
    only within `output_bytes`."""
    plugin = os.path.join(HERE, "artifacts")
    server = Serve(folder, f'[server]\noutput_bytes = 65536\n\n[[plugin]]\nname = "art"\nkind = "javascript"\npath = "{plugin}"\n')
    before = status_kib(server.pid, "VmRSS") / 1024
    clients = [Http(server.url) for _ in range(sessions)]
    said = {"kept": [], "refused": set()}

    def run():
        # A 2026-07-28 program's artifacts travel embedded (within the cap) and are freed with it.
        said["round"], said["round_bytes"] = post_2026(server.url, "return await tools.art.fill({ count: 1, mib: 1 })")
        for client in clients:
            client.initialize()
            got = json.loads(texts(client.execute(f"return await tools.art.fill({{ count: {per_session}, mib: {mib} }})"))[0])
            said["kept"].append(got["kept"])
            if got["refused"]:
                said["refused"].add(got["refused"].split(" (")[0])
        said["rss"] = status_kib(server.pid, "VmRSS") / 1024 - before
        said["next"] = texts(clients[0].execute("return 'served'"))
        return f"kept per session {said['kept']}; refused: {sorted(said['refused'])}; 2026 answer {said['round_bytes']} bytes"

    measured(f"artifacts: {sessions} sessions x {per_session} x {mib} MiB", server.pid, cpu_seconds(server.pid), run, lambda: server.slowest)
    full = 256 // (per_session * mib)
    check(said["kept"] == [per_session] * full + [0] * (sessions - full), f"the server keeps 256 MiB of artifacts: {said['kept']}")
    check(said["refused"] == {"ctx.artifacts.write: the server's artifacts are full"}, f"past it, writes are refused naming the bound: {said['refused']}")
    check(said["rss"] <= 256 + 160, f"host RSS grew by at most 416 MiB (256 MiB of artifacts): {said['rss']:.0f} MiB")
    print(f"  artifacts: host RSS grew {said['rss']:.0f} MiB", flush=True)
    round_texts = [c.get("text", "") for c in said["round"].get("result", {}).get("content", [])]
    check(said["round_bytes"] <= 65536 + 2048 and any("artifacts were left out of this answer: fill/0.bin" in t for t in round_texts), f"a 2026 answer embeds artifacts within the cap, naming the rest: {said['round_bytes']} bytes, {[t[:200] for t in round_texts]}")
    check(said["next"] in (['"served"'], ["served"]), f"the host answers the next request: {said['next']}")
    server.close()


def case_abandoned(folder, programs=3, wait_ms=2000):
    """Programs paused on approvals whose 2026-07-28 client never comes back: each is
    paused for at most `answer_wait_ms`, asks nothing more, and ends; the paused places
    are free again for other programs."""
    config = f'[server]\nanswer_wait_ms = {wait_ms}\nmax_paused_programs = {programs}\nmax_paused_programs_per_session = {programs}\n\n[[plugin]]\nname = "flood"\nkind = "process"\ncommand = "python3"\nargs = ["{FLOOD}"]\nrequire_approval = ["echo"]\n'
    server = Serve(folder, config)
    asks = {"elicitation": {"form": {}}}
    program = "const said = []; for (let i = 0; i < 3; i++) { try { await tools.flood.echo({ i }); said.push('ran') } catch (e) { said.push(e.message) } } return said"
    said = {}

    def run():
        t0 = time.monotonic()
        states = []
        for _ in range(programs):
            answer, _ = post_2026(server.url, program, capabilities=asks)
            states.append(answer.get("result", {}).get("requestState"))
        said["paused"] = sum(1 for s in states if s)
        full, _ = post_2026(server.url, program, capabilities=asks)
        said["full"] = json.dumps(full)[:400]
        time.sleep(wait_ms / 1000 + 1.5)
        said["results"] = [post_2026(server.url, program, state=s, capabilities=asks)[0].get("result", {}) for s in states if s]
        again, _ = post_2026(server.url, program, capabilities=asks)
        said["again"] = again.get("result", {}).get("resultType")
        return f"{said['paused']} paused; after {time.monotonic() - t0:.1f} s: {[texts({'result': r})[:1] for r in said['results']][:1]}; a new program: {said['again']}"

    measured(f"abandoned: {programs} programs paused, their client gone", server.pid, cpu_seconds(server.pid), run, lambda: server.slowest)
    check(said["paused"] == programs, f"each program paused on its approval: {said['paused']}")
    check("max_paused_programs" in said["full"], f"past the paused cap a question is refused: {said['full']}")
    wanted = [
        "asking for approval of tools.flood.echo failed: the client did not come back with the person's answer: no answer came within 2 s (`[server] answer_wait_ms`)",
        f"asking for approval of tools.flood.echo failed: an earlier question of this program went unanswered for 2 s, so its client is taken to be gone and nothing more is asked",
    ]
    for result in said["results"]:
        got = json.loads(texts({"result": result})[0]) if texts({"result": result}) else result
        check(got == [wanted[0], wanted[1], wanted[1]], f"the program was paused once, then asked nothing and ended: {got}")
    check(said["again"] == "input_required", f"the paused places are free again: {said['again']}")
    server.close()


def case_sampling_wide(folder, programs=12, asks=10, question_bytes=1 << 20):
    """12 programs of 2026-07-28 clients, each asking 10 questions of 1 MiB that are
    never answered: the server holds at most 64 MiB of question text for all of them,
    the programs past it are refused naming the server's bound."""
    plugin = os.path.join(HERE, "big_questions.ts")
    config = f'[server]\nmax_paused_programs = 32\nmax_paused_programs_per_session = 32\n\n[[plugin]]\nname = "big"\nkind = "javascript"\npath = "{plugin}"\n'
    server = Serve(folder, config)
    before = status_kib(server.pid, "VmRSS") / 1024
    program = f"return await Promise.all(Array.from({{ length: {asks} }}, () => tools.big.ask_big({{ bytes: {question_bytes} }}).catch((e) => e.message)))"
    said = {"asking": 0, "refused": []}

    def run():
        for _ in range(programs):
            answer, _ = post_2026(server.url, program, capabilities={"sampling": {}})
            result = answer.get("result", {})
            if result.get("resultType") == "input_required":
                said["asking"] += 1
            else:
                said["refused"].append(json.loads(texts({"result": result})[0]))
        said["rss"] = status_kib(server.pid, "VmRSS") / 1024 - before
        said["next"], _ = post_2026(server.url, "return 'served'")
        return f"{said['asking']} programs wait for answers, {len(said['refused'])} refused; host RSS +{said['rss']:.0f} MiB"

    measured(f"sampling, server-wide: {programs} programs x {asks} x {question_bytes >> 20} MiB unanswered", server.pid, cpu_seconds(server.pid), run, lambda: server.slowest)
    held = 64 // (8 * (question_bytes >> 20))
    check(said["asking"] == held, f"{held} programs hold 8 questions each (64 MiB): {said['asking']}")
    server_bound = "the server holds 128 questions or 64 MiB of question text for clients' models already"
    check(all(len(r) == asks and all(server_bound in m for m in r) for r in said["refused"]) and len(said["refused"]) == programs - held, f"the others are refused naming the server's bound: {[r[:1] for r in said['refused']]}")
    check(said["rss"] <= 64 + 96, f"host RSS grew by at most 160 MiB (64 MiB of questions held): {said['rss']:.0f} MiB")
    check(texts(said["next"]) in (['"served"'], ["served"]), f"the host answers the next request: {texts(said['next'])}")
    server.close()


def case_cancel_paused(folder, seats=2, rounds=3):
    """Every paused place filled by programs waiting on an approval (the programs past
    it are refused the pause), each then cancelled while paused: their places are free
    for the next programs, as many times as it is done."""
    config = f'[server]\nmax_concurrent_programs = {seats}\nmax_paused_programs = {seats}\n\n[[plugin]]\nname = "flood"\nkind = "process"\ncommand = "python3"\nargs = ["{FLOOD}"]\nrequire_approval = ["echo"]\n'
    path = write(os.path.join(folder, "codemode.toml"), config)
    client = Stdio([CODEMODE, "mcp", "--config", path], env=env(), unanswered={"elicitation/create"})
    client.initialize(elicitation=True)
    said = {"paused": [], "served": None}

    def run():
        for _ in range(rounds):
            asked = len(client.held)
            ids = [client.start("tools/call", {"name": "execute", "arguments": {"code": "await tools.flood.echo({}); return 'ran'"}})[0] for _ in range(2 * seats)]
            deadline = time.monotonic() + 10
            while len(client.held) < asked + seats and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(0.3)  # no more than the paused places are asked
            said["paused"].append(len(client.held) - asked)
            for rid in ids:
                client.notify("notifications/cancelled", {"requestId": rid, "reason": "the agent moved on"})
        t0 = time.monotonic()
        said["served"] = texts(client.execute("return 'served'", timeout=10))
        return f"paused per round {said['paused']}; then a program in {time.monotonic() - t0:.2f} s: {said['served']}"

    measured(f"cancel while paused: {rounds} rounds of {2 * seats} programs on {seats} paused places, cancelled", client.pid, cpu_seconds(client.pid), run)
    check(said["paused"] == [seats] * rounds, f"every round fills the paused places again (freed by each cancel): {said['paused']}")
    check(said["served"] in (['"served"'], ["served"]), f"a program runs after them: {said['served']}")
    client.close()


def case_big_input(folder, mib=48):
    """A 48 MiB string as a tool's input, on its way to a process plugin's line: the host
    holds it about twice (its parsed value and the line), not as copies of copies."""
    config = f'[limits]\ntool_bytes_in_flight = {48 << 20}\nmemory_mib = 1024\n\n[[plugin]]\nname = "flood"\nkind = "process"\ncommand = "python3"\nargs = ["{FLOOD}"]\n'
    client = mcp(folder, config)
    client.execute("return await tools.flood.length({ s: 'warm' })")
    idle = status_kib(client.pid, "VmRSS") / 1024
    n = (mib << 20) - 4096
    said = {}

    def run():
        said["length"] = texts(client.execute(f"return await tools.flood.length({{ s: 'x'.repeat({n}) }})", timeout=120))
        said["grown"] = status_kib(client.pid, "VmHWM") / 1024 - idle
        return f"the plugin read {said['length']}; host peak RSS +{said['grown']:.0f} MiB over idle = {said['grown'] / (n / 1048576):.2f}x the input"

    measured(f"big input: a {mib} MiB string to a process plugin", client.pid, cpu_seconds(client.pid), run)
    check(said["length"] in ([str(n)], [f'"{n}"']), f"the plugin reads the whole input: {said['length']}")
    check(said["grown"] <= 3 * mib, f"the host holds the input at most 3 times: +{said['grown']:.0f} MiB")
    client.close()


CASES = {
    "agent_names": case_agent_names,
    "big_input": case_big_input,
    "cancel_paused": case_cancel_paused,
    "sampling_wide": case_sampling_wide,
    "abandoned": case_abandoned,
    "artifacts": case_artifacts,
    "journal": case_journal,
    "sampling": case_sampling,
    "random": case_random,
    "search": case_search,
    "healthz": case_healthz,
    "media": case_media,
    "module": case_module,
    "changes": case_changes,
    "biglist": case_biglist,
    "oauth": case_oauth,
    "environ": case_environ,
    "approval": case_approval,
    "alias": case_alias,
    "cause": case_cause,
    "calls": case_calls,
    "sessions": case_sessions,
    "memory": case_memory,
    "trickle": case_trickle,
}



# ---- Files the host reads (issue 33): the search model's weights and the embeddings
# cache as a link to /dev/zero, a FIFO, a sparse 8 GiB file and a flipped byte. Each
# `codemode serve` answers /healthz within a second of its start, becomes ready, says
# what was wrong (the model: search by words alone; the cache: rewritten) and keeps its
# peak RSS under 200 MiB (measured: 19-65 MiB). Needs CODEMODE_SEARCH_MODEL (scripts/test.sh sets it).
def case_model_files(folder):
    """A hostile search model or embeddings cache never hangs the host or grows it."""
    installed = os.environ.get("CODEMODE_SEARCH_MODEL")
    if not installed:
        print("  CODEMODE_SEARCH_MODEL is not set: skipped", flush=True)
        return
    import hashlib

    weights_sha = hashlib.sha256(open(os.path.join(installed, "model.safetensors"), "rb").read()).hexdigest()

    def hostile(path, form):
        sound = open(path, "rb").read()
        os.remove(path)
        if form == "link":
            os.symlink("/dev/zero", path)
        elif form == "fifo":
            os.mkfifo(path)
        elif form == "sparse":
            with open(path, "wb") as f:
                f.write(sound[:64])
                f.truncate(8 << 30)
        else:
            damaged = bytearray(sound)
            damaged[len(damaged) // 2] ^= 0xFF
            open(path, "wb").write(bytes(damaged))

    def serve(case, model, said, until=None, lines=None):
        os.makedirs(os.path.join(case, "cache"), exist_ok=True)
        config = write(os.path.join(case, "codemode.toml"), f"example_tools = true\n\n[server]\nsearch_model = {json.dumps(model)}\n")
        started = time.monotonic()
        proc = subprocess.Popen(
            [CODEMODE, "serve", "--config", config, "--listen", "127.0.0.1:0", "--ops-listen", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=env(XDG_CACHE_HOME=os.path.join(case, "cache"), XDG_DATA_HOME=os.path.join(case, "data")),
        )
        lines, ops = ([] if lines is None else lines), []

        def read():
            for raw in proc.stderr:
                line = raw.decode(errors="replace")
                lines.append(line)
                if "serving /healthz" in line:
                    ops.append(line.split(" on ", 1)[1].split()[0])
        threading.Thread(target=read, daemon=True).start()
        try:
            while not ops and time.monotonic() - started < 1.0:
                time.sleep(0.01)
            status = get(ops[0] + "/healthz", timeout=1)[0] if ops else None
            healthz = time.monotonic() - started
            check(status == 200 and healthz <= 1.0, f"/healthz within 1 s of the start: {status} after {healthz:.2f} s")
            # Stops early when the host dies or passes the RSS bound (a build from before
            # the fix grows without bound on /dev/zero).
            alive = lambda: proc.poll() is None and status_kib(proc.pid, "VmHWM") <= 200 << 10  # noqa: E731
            while alive() and time.monotonic() - started < 30 and not (ops and get(ops[0] + "/readyz")[0] == 200):
                time.sleep(0.05)
            done = until or (lambda: any(said in line for line in lines))
            while alive() and time.monotonic() - started < 30 and not done():
                time.sleep(0.05)
            check(done(), f"said {said!r}: {''.join(lines)[-2000:]}")
            peak = status_kib(proc.pid, "VmHWM") / 1024 if proc.poll() is None else float("nan")
            check(peak <= 200, f"peak RSS {peak:.0f} MiB <= 200 MiB")
            return healthz, peak
        finally:
            proc.kill()
            proc.wait()

    for form in ("link", "fifo", "sparse", "flipped"):
        case = os.path.join(folder, "weights-" + form)
        model = os.path.join(case, "model")
        shutil.copytree(installed, model)
        weights = os.path.join(model, "model.safetensors")
        hostile(weights, form)
        said = f"the search model cannot be used ({weights} " + {
            "link": "is a symbolic link", "fifo": "is a FIFO", "sparse": "holds 8589934592 bytes",
            "flipped": "is damaged"}[form]
        healthz, peak = serve(case, model, said)
        ROWS.append((f"model files: the weights as {form}", None, peak, None, healthz, "BM25, said on stderr"))
    for form in ("link", "fifo", "sparse", "flipped"):
        case = os.path.join(folder, "cache-" + form)
        cache = os.path.join(case, "cache", "codemode", "embeddings", f"all-MiniLM-L6-v2-{weights_sha[:16]}.bin")
        serve(case, installed, "a cache written", until=lambda: os.path.isfile(cache))
        hostile(cache, form)
        said = f"the embedding cache is not used ({cache} "
        lines = []
        rewritten = lambda: os.path.isfile(cache) and not os.path.islink(cache)  # noqa: E731
        healthz, peak = serve(case, installed, said, until=lambda: rewritten() and any(said in l for l in lines), lines=lines)
        ROWS.append((f"model files: the cache as {form}", None, peak, None, healthz, "rewritten, said on stderr"))


CASES["model_files"] = case_model_files

def main():
    folder = tempfile.mkdtemp(prefix="codemode-hostile-")
    try:
        for name, case in CASES.items():
            if ONLY and name not in ONLY:
                continue
            print(f"{name}: {case.__doc__.strip().splitlines()[0]}", flush=True)
            try:
                case(os.path.join(folder, name))
            except Exception as e:  # noqa: BLE001 (a crashed case is a failed check)
                check(False, f"{name} raised {type(e).__name__}: {e}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print("\n| attack | host CPU | peak RSS | elapsed | slowest /healthz | result |")
    print("|---|---:|---:|---:|---:|---|")
    for name, cpu, peak, elapsed, health, detail in ROWS:
        fmt = lambda v, f: f.format(v) if v is not None else ""  # noqa: E731
        print(
            f"| {name} | {fmt(cpu, '{:.2f} s')} | {fmt(peak, '{:.0f} MiB')} | {fmt(elapsed, '{:.2f} s')} | {fmt(health and health * 1000, '{:.0f} ms')} | {detail} |"
        )
    if FAILED and not REPORT_ONLY:
        print(f"\n{len(FAILED)} check(s) failed")
        sys.exit(1)
    print(f"\n{len(FAILED)} check(s) failed" + (" (report only)" if REPORT_ONLY else ""))


if __name__ == "__main__":
    main()
