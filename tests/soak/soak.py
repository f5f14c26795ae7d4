"""The soak run: 10,000 programs at 16 in flight against `codemode serve`, while plugins
and the template are broken under it, two plugins flood the host with tool changes, and
every tenth program floods it with searches.

Run by scripts/soak.sh (which builds codemode and installs the MCP Python SDK):

    python tests/soak/soak.py path/to/codemode [PROGRAMS] [IN_FLIGHT]

The programs call an in-process tool, a Python process plugin and a JavaScript plugin.
A fifth of the way in, the Python plugin is killed (SIGKILL); at two fifths, the
JavaScript plugin's runtime is stopped (SIGSTOP, so its calls time out until the host
takes it for hung and replaces it); at three fifths, the template process is killed.
Every program must end with an outcome the client can read: its value, or an error
result naming the reason. Programs after each break must succeed again.

All along, a JavaScript plugin registers and removes a tool every 5 ms and a process
plugin announces `host/tools.changed` every millisecond (the host re-lists each at most
once a second, and only it), and every tenth program makes 20 searches and one oversized
search (refused at once). `/healthz` is asked every 200 ms throughout; its slowest answer
is reported and must stay under a second on this loaded machine.

Every 500 programs the host's open descriptors, zombie children and RSS are sampled;
after the warm-up they must stay flat. At the end the host is killed (SIGKILL) and no
worker, template or plugin process may be left.

Prints the figures; exits 1 when a check fails.
"""

import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import httpx2  # noqa: F401  (the SDK's HTTP client; imported so a missing SDK fails here)
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CODEMODE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/release/codemode"))
PROGRAMS = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
IN_FLIGHT = int(sys.argv[3]) if len(sys.argv) > 3 else 16

PROGRAM = """
const [sum, count, greeting] = await Promise.all([
  tools.math.add({ a: %d, b: 1 }),
  tools.py_tools.word_count({ text: "one two three" }),
  tools.hello.greet({ name: "soak" }),
]);
return { sum: Number(sum), words: count.words, greeting };
"""

# Every tenth program: searches, then a query far past the caps (refused at once).
SEARCH_PROGRAM = """
let found = 0;
for (let i = 0; i < 20; i++) found += (await tools.$search("forecast for a city " + i + " %d")).length;
let refused = "";
try { await tools.$search("word ".repeat(20000)); } catch (e) { refused = e.message.slice(0, 40); }
return { found, refused };
"""

FLICKER_JS = """export function activate(api) {
  let handle = null;
  setInterval(() => {
    if (handle) { handle.remove(); handle = null; }
    else handle = api.tools.register({ name: "flicker", description: "Comes and goes.", run: () => "ok" });
  }, 5);
  api.tools.register({ name: "steady", description: "Always there.", run: () => "ok" });
}
"""


def children(pid):
    """(pid, state, exe name) of every process whose parent is `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[1]) == pid:
                comm = stat[stat.index("(") + 1 : stat.rindex(")")]
                found.append((int(entry), fields[0], comm))
        except (OSError, ValueError):
            pass
    return found


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        for child in children(todo.pop()):
            out.append(child)
            todo.append(child[0])
    return out


def sample(pid):
    # The fewest of a few readings: descriptors of the programs in flight come and go
    # by the millisecond; a leak stays.
    fds = min(len(os.listdir(f"/proc/{pid}/fd")) for _ in range(5) if time.sleep(0.005) is None)
    zombies = sum(1 for _, state, _ in children(pid) if state == "Z")
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return {"fds": fds, "zombies": zombies, "rss_mib": rss / 1024}


def find(pid, predicate):
    for child_pid, _, comm in descendants(pid):
        try:
            cmdline = open(f"/proc/{child_pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if predicate(comm, [a.decode(errors="replace") for a in cmdline]):
            return child_pid
    return None


def config_file():
    folder = tempfile.mkdtemp(prefix="codemode-soak-")
    flicker = os.path.join(folder, "flicker")
    os.makedirs(flicker)
    with open(os.path.join(flicker, "manifest.json"), "w") as f:
        f.write('{ "name": "flicker", "version": "1", "main": "main.js", "permissions": { "tools.provide": {} } }')
    with open(os.path.join(flicker, "main.js"), "w") as f:
        f.write(FLICKER_JS)
    path = os.path.join(folder, "codemode.toml")
    with open(path, "w") as f:
        f.write(f"""example_tools = true

[limits]
cpu_step_ms = 10000

[server]
max_concurrent_programs = {IN_FLIGHT}
max_sessions = 64

[[plugin]]
name = "py-tools"
kind = "process"
command = "python3"
args = ["{ROOT}/plugins/py-tools/plugin.py"]
timeout_ms = 2000

[[plugin]]
name = "hello"
kind = "javascript"
path = "{ROOT}/plugins/hello-tools"
timeout_ms = 2000

[[plugin]]
name = "flicker"
kind = "javascript"
path = "{flicker}"

[[plugin]]
name = "flood"
kind = "process"
command = "python3"
args = ["{ROOT}/tests/hostile/flood_plugin.py", "--flood-ms", "1"]
""")
    return path


def healthz_seconds(ops):
    """How long /healthz took to answer, and its status (0: no answer, counted as 10 s).
    While the killed template is being replaced it answers 503, as it should."""
    import http.client
    import urllib.parse

    parsed = urllib.parse.urlparse(ops)
    started = time.perf_counter()
    try:
        conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10)
        conn.request("GET", "/healthz")
        status = conn.getresponse().status
        conn.close()
        return time.perf_counter() - started, status
    except OSError:
        return 10.0, 0


async def main():
    config = config_file()
    server = subprocess.Popen(
        [CODEMODE, "serve", "--config", config, "--listen", "127.0.0.1:0", "--ops-listen", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = ops = None
    while url is None:
        line = server.stderr.readline()
        if not line:
            sys.exit("codemode serve exited before it listened")
        if "serving /healthz" in line:
            ops = line.split(" on ", 1)[1].split()[0]
        if "serving MCP on " in line:
            url = line.split("serving MCP on ")[1].split()[0]
    # Keep its stderr drained.
    asyncio.get_running_loop().run_in_executor(None, lambda: [None for _ in server.stderr])

    host = server.pid
    next_program = 0
    results = []  # (index, seconds, ok, text)
    breaks = {}  # name -> program index when it happened
    samples = []
    failures = []
    health = []  # seconds per /healthz answer

    async def client(worker):
        nonlocal next_program
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                while next_program < PROGRAMS:
                    index = next_program
                    next_program += 1
                    started = time.perf_counter()
                    try:
                        code = (SEARCH_PROGRAM if index % 10 == 0 else PROGRAM) % index
                        result = await session.call_tool("execute", {"code": code})
                        text = " ".join(c.text for c in result.content if c.type == "text")
                        results.append((index, time.perf_counter() - started, not result.is_error, text))
                    except Exception as e:  # a client-side failure: no outcome reached the client
                        results.append((index, time.perf_counter() - started, False, f"NO OUTCOME: {e!r}"))

    async def prober():
        loop = asyncio.get_running_loop()
        while next_program < PROGRAMS:
            health.append(await loop.run_in_executor(None, healthz_seconds, ops))
            await asyncio.sleep(0.2)

    async def breaker():
        fifth = PROGRAMS // 5
        while next_program < PROGRAMS:
            done = len(results)
            if done % 500 < IN_FLIGHT and (not samples or samples[-1][0] != done // 500):
                samples.append((done // 500, done, sample(host)))
            if "plugin killed" not in breaks and done >= fifth:
                pid = find(host, lambda comm, argv: any(a.endswith("py-tools/plugin.py") for a in argv))
                if pid:
                    os.kill(pid, signal.SIGKILL)
                    breaks["plugin killed"] = done
            if "plugin stopped" not in breaks and done >= 2 * fifth:
                pid = find(host, lambda comm, argv: len(argv) > 1 and argv[1] == "plugin" and "hello-tools" in " ".join(argv))
                if pid:
                    # The runtime's process (the launcher's child) and the launcher.
                    for child_pid, _, _ in descendants(pid):
                        os.kill(child_pid, signal.SIGSTOP)
                    os.kill(pid, signal.SIGSTOP)
                    breaks["plugin stopped"] = done
            if "template killed" not in breaks and done >= 3 * fifth:
                pid = find(host, lambda comm, argv: len(argv) > 1 and argv[1] == "template")
                if pid:
                    os.kill(pid, signal.SIGKILL)
                    breaks["template killed"] = done
            await asyncio.sleep(0.01)

    started = time.perf_counter()
    breaking = asyncio.create_task(breaker())
    probing = asyncio.create_task(prober())
    try:
        await asyncio.gather(*(client(i) for i in range(IN_FLIGHT)))
    finally:
        breaking.cancel()
        probing.cancel()
    elapsed = time.perf_counter() - started
    final = sample(host)

    # Kill the host: nothing it started may outlive it.
    tree = descendants(host)
    server.kill()
    server.wait()
    time.sleep(2)
    left = [(pid, comm) for pid, _, comm in tree if os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split(") ")[1][0] != "Z"]

    # --- checks
    results.sort()
    outcomes = len(results)
    no_outcome = [r for r in results if r[3].startswith("NO OUTCOME")]
    errors = [r for r in results if not r[2]]
    if outcomes != PROGRAMS:
        failures.append(f"{outcomes} outcomes for {PROGRAMS} programs")
    if no_outcome:
        failures.append(f"{len(no_outcome)} programs got no outcome; first: {no_outcome[0][3][:200]}")
    unclear = [r for r in errors if not any(k in r[3] for k in ("plugin", "timed out", "Worker", "worker", "template", "cancelled"))]
    if unclear:
        failures.append(f"{len(unclear)} failed programs without a clear reason; first: {unclear[0][3][:300]}")
    for name, at in breaks.items():
        # Programs that started well after the break must succeed again.
        later = [r for r in results if r[0] >= at + 3 * IN_FLIGHT + 200]
        window = later[:200]
        if window and not all(r[2] for r in window[100:]):
            bad = next(r for r in window[100:] if not r[2])
            failures.append(f"after '{name}' (at program {at}) programs kept failing: {bad[3][:200]}")
    for name in ("plugin killed", "plugin stopped", "template killed"):
        if name not in breaks:
            failures.append(f"the soak could not do '{name}' (process not found)")
    # Flat: after the warm-up, the last third of the samples holds no more than the first
    # third (descriptors and zombies come and go with the programs in flight), and once
    # every client is gone the host is back where it started.
    steady = [s for _, done, s in samples if done >= PROGRAMS // 10]
    baseline = samples[0][2] if samples else final
    if len(steady) >= 3:
        third = max(1, len(steady) // 3)
        first, last = steady[:third], steady[-third:]
        if statistics.median(s["fds"] for s in last) > statistics.median(s["fds"] for s in first) + 12:
            failures.append(f"open descriptors grew: {[s['fds'] for s in steady]}")
        if statistics.median(s["rss_mib"] for s in last) > statistics.median(s["rss_mib"] for s in first) + 24:
            failures.append(f"host RSS grew: {[round(s['rss_mib']) for s in steady]} MiB")
        if max(s["zombies"] for s in steady) > IN_FLIGHT:
            failures.append(f"{max(s['zombies'] for s in steady)} zombie children at once")
    if final["fds"] > baseline["fds"] + 4:
        failures.append(f"{final['fds']} descriptors open after every client left, {baseline['fds']} before the run")
    if final["zombies"]:
        failures.append(f"{final['zombies']} zombie children after the run")
    if left:
        failures.append(f"processes outlived the host: {left}")
    searching = [r for r in results if r[0] % 10 == 0 and r[2]]
    if searching and not all('"refused":"tools.$search: the query has' in r[3] for r in searching):
        bad = next(r for r in searching if '"refused":"tools.$search: the query has' not in r[3])
        failures.append(f"a searching program did not see its oversized query refused: {bad[3][:200]}")
    if health and max(seconds for seconds, _ in health) >= 1.0:
        failures.append(f"/healthz took {max(seconds for seconds, _ in health) * 1000:.0f} ms to answer (or did not)")

    # --- figures
    latencies = sorted(r[1] for r in results if r[2])
    print(f"soak: {PROGRAMS} programs at {IN_FLIGHT} in flight in {elapsed:.1f} s ({PROGRAMS / elapsed:.0f} programs/s)")
    if latencies:
        p50 = statistics.median(latencies) * 1000
        p95 = latencies[int(len(latencies) * 0.95)] * 1000
        print(f"  latency of successful programs: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    print(f"  failed programs: {len(errors)} (every one with a reason), no outcome: {len(no_outcome)}")
    for name, at in breaks.items():
        around = [r for r in results if at <= r[0] < at + 3 * IN_FLIGHT + 200 and not r[2]]
        sample_reason = around[0][3][:160] if around else "-"
        print(f"  {name} at program {at}: {len(around)} programs around it failed, e.g. {sample_reason!r}")
    print("  host samples (programs done: fds, zombies, RSS MiB):")
    for _, done, s in samples:
        print(f"    {done:6d}: {s['fds']:4d} fds, {s['zombies']} zombies, {s['rss_mib']:.1f} MiB")
    print(f"    final : {final['fds']:4d} fds, {final['zombies']} zombies, {final['rss_mib']:.1f} MiB")
    print(f"  processes left after killing the host: {len(left)}")
    if health:
        ordered = sorted(seconds for seconds, _ in health)
        unhealthy = sum(1 for _, status in health if status != 200)
        print(
            f"  /healthz, {len(health)} probes: p50 {statistics.median(ordered) * 1000:.1f} ms, "
            f"p99 {ordered[int(len(ordered) * 0.99)] * 1000:.1f} ms, slowest {ordered[-1] * 1000:.1f} ms; "
            f"{unhealthy} answered unhealthy (the killed template not yet replaced)"
        )
    if failures:
        print("\nFAILED:")
        for f in failures:
            print(f"  - {f}")
        return 1
    print("\nsoak passed")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
