#!/usr/bin/env python3
"""The codemode escape suite: every case runs a real attack and must fail the way it says.

JavaScript cases (tests/escape/js/*.js) run through `codemode run --json`; native cases
(tests/escape/native/*.c, built here as shared objects) run through
`codemode sandbox-exec`, which calls them inside a worker under the worker's exact
policy. Each file's header names the attack, its category and the expected failure.

After every case the runner checks that the host is untouched: the canary file and its
folder are unchanged, nothing connected to the TCP listener on 127.0.0.1, and no worker
process is left. A control run with the sandbox disabled must be caught as an escape,
which shows that the checks can fail.

Below-seccomp cases (tests/escape/below-seccomp/*.c) run the same way but in a worker
whose seccomp filter is left out (`--skip-layer seccomp`, accepted only by the test build
of the worker, SANDBOX_WORKER_TEST_SWITCHES): the layers below seccomp must stop them on
their own. UDP listeners on 127.0.0.1 and [::1] count anything that reaches them.

Prints a table (case, category, expected, observed, result) and exits 1 on any escape.
Usage: run.py CODEMODE SANDBOX_WORKER BUILD_DIR SANDBOX_WORKER_TEST_SWITCHES
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
SIGSYS = 31


def header(path):
    meta = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*//\s*(attack|category|expect|expect-value|expect-value-text|expect-max-output|layers-removed|memory-mib|cpu-step-ms):\s*(.*)", line)
            if not m:
                break
            meta[m.group(1)] = m.group(2).strip()
    return meta


class Listener:
    """A TCP listener on 127.0.0.1 that counts connections."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.stop = False
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
                self.connections += 1
                conn.close()
            except OSError:
                pass


class UdpListener:
    """A UDP socket on a loopback address that counts datagrams."""

    def __init__(self, family, address):
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        self.sock.bind((address, 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.datagrams = 0
        self.stop = False
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.stop:
            try:
                self.sock.recv(65536)
                self.datagrams += 1
            except OSError:
                pass


def worker_processes(worker):
    real = os.path.realpath(worker)
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.path.realpath(f"/proc/{pid}/exe") == real:
                    found.append(int(pid))
            except OSError:
                pass
    return found


def snapshot(folder):
    return {name: open(os.path.join(folder, name), "rb").read() for name in sorted(os.listdir(folder))}


def build_payloads(build_dir, folder="native"):
    os.makedirs(build_dir, exist_ok=True)
    native = os.path.join(HERE, folder)
    built = []
    for name in sorted(os.listdir(native)):
        if not name.endswith(".c"):
            continue
        out = os.path.join(build_dir, folder + "-" + name[:-2] + ".so")
        subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o", out, os.path.join(native, name)], check=True)
        built.append((os.path.join(native, name), out))
    return built


def describe(rc):
    if rc >= 128:
        sig = rc - 128
        return f"signal {sig} (SIGSYS)" if sig == SIGSYS else f"signal {sig}"
    return f"exit {rc}"


def run_native(codemode, src, so, canary, port):
    meta = header(src)
    expect = meta["expect"]
    proc = subprocess.run([codemode, "sandbox-exec", "--", so, canary, str(port)], capture_output=True, text=True, timeout=60)
    observed = describe(proc.returncode)
    if expect == "signal SIGSYS":
        ok = proc.returncode == 128 + SIGSYS
    else:  # "exit 0" or "errno X": the payload checked the errno itself
        ok = proc.returncode == 0
        if ok and expect.startswith("errno"):
            observed = expect
    detail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() and not ok else ""
    return meta, expect, observed + (f" [{detail}]" if detail else ""), ok


def run_below_seccomp(test_worker, src, so, canary, port, udp4, udp6):
    """A payload in a worker whose listed layers (seccomp) are left out: the rest must hold."""
    meta = header(src)
    expect = meta["expect"]
    skip = []
    for layer in meta.get("layers-removed", "").split(","):
        if layer.strip():
            skip += ["--skip-layer", layer.strip()]
    cmd = [test_worker, "exec", "--host-pid", str(os.getpid()), "--sandbox", "required", "--payload", so, *skip, "--", canary, str(port), str(udp4), str(udp6)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    observed = describe(proc.returncode)
    ok = proc.returncode == 0
    detail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() and not ok else ""
    return meta, expect, observed + (f" [{detail}]" if detail else ""), ok


def run_js(codemode, src):
    meta = header(src)
    expect = meta["expect"]
    want_kind = expect.split("=", 1)[1]
    cmd = [codemode, "run", "--json", "--example-tools", "--cpu-step-ms", meta.get("cpu-step-ms", "1000"), "--memory-mib", meta.get("memory-mib", "64"), src]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    try:
        outcome = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return meta, expect, f"no outcome (exit {proc.returncode}): {proc.stderr.strip()[:120]}", False
    kind = outcome.get("kind")
    observed = f"kind={kind}"
    ok = kind == want_kind
    if "expect-value" in meta:
        want = json.loads(meta["expect-value"])
        got = json.loads(outcome["value"]) if outcome.get("value") is not None else None
        observed += f" value={json.dumps(got)[:60]}"
        expect += f" value={meta['expect-value'][:40]}"
        ok = ok and got == want
    if "expect-value-text" in meta:
        # The value's JSON text exactly, so that null and undefined (no value) differ.
        got = outcome.get("value")
        observed += f" value-text={got!r}"
        expect += f" value-text={meta['expect-value-text']}"
        ok = ok and got == meta["expect-value-text"]
    if "expect-max-output" in meta:
        limit = int(meta["expect-max-output"])
        observed += f" output={len(proc.stdout)} bytes"
        expect += f" output<={limit} bytes"
        ok = ok and len(proc.stdout) <= limit
    if kind == "error":
        observed += f" {outcome.get('name')}"
    return meta, expect, observed, ok


def control(worker, so, canary, port):
    """The same attack with the sandbox disabled must be caught as an escape."""
    proc = subprocess.run(
        [worker, "exec", "--host-pid", str(os.getpid()), "--sandbox", "disabled", "--payload", so, "--", canary, str(port)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.returncode == 1 and "ESCAPED" in proc.stderr


def main():
    codemode, worker, build_dir, test_worker = sys.argv[1:5]
    payloads = build_payloads(build_dir)
    below = build_payloads(build_dir, "below-seccomp")
    listener = Listener()
    udp4 = UdpListener(socket.AF_INET, "127.0.0.1")
    udp6 = UdpListener(socket.AF_INET6, "::1")
    canary_dir = tempfile.mkdtemp(prefix="codemode-canary-")
    canary = os.path.join(canary_dir, "canary.txt")
    with open(canary, "w") as f:
        f.write("the host's file: no program may read, change or delete it\n")
    before = snapshot(canary_dir)

    rows = []
    cases = [("native", src, so) for src, so in payloads]
    cases += [("below", src, so) for src, so in below]
    cases += [("js", os.path.join(HERE, "js", n), None) for n in sorted(os.listdir(os.path.join(HERE, "js"))) if n.endswith(".js")]
    for kind, src, so in cases:
        name = os.path.basename(src).rsplit(".", 1)[0]
        if kind == "native":
            meta, expect, observed, ok = run_native(codemode, src, so, canary, listener.port)
        elif kind == "below":
            meta, expect, observed, ok = run_below_seccomp(test_worker, src, so, canary, listener.port, udp4.port, udp6.port)
        else:
            meta, expect, observed, ok = run_js(codemode, src)
        problems = []
        if snapshot(canary_dir) != before:
            problems.append("the canary changed")
        if listener.connections:
            problems.append(f"{listener.connections} connection(s) reached 127.0.0.1:{listener.port}")
        if udp4.datagrams or udp6.datagrams:
            problems.append(f"{udp4.datagrams + udp6.datagrams} UDP datagram(s) reached the loopback listeners")
        left = worker_processes(worker)
        if left:
            problems.append(f"worker processes left behind: {left}")
        if problems:
            ok = False
            observed += " [" + "; ".join(problems) + "]"
        rows.append((name, meta.get("category", kind), expect, observed, ok))

    control_ok = control(worker, dict((os.path.basename(s), o) for s, o in payloads)["fs_read_host_file.c"], canary, listener.port)
    rows.append(("control_sandbox_disabled", "harness", "the unsandboxed attack is caught as an escape", "caught" if control_ok else "NOT caught", control_ok))
    # The release worker must refuse the test switch: it exists only in the test build.
    proc = subprocess.run([worker, "exec", "--host-pid", str(os.getpid()), "--payload", payloads[0][1], "--skip-layer", "seccomp", "--"], capture_output=True, text=True, timeout=60)
    refused = proc.returncode != 0 and "insecure-test-switches" in proc.stderr
    rows.append(("control_release_refuses_skip_layer", "harness", "the release worker refuses --skip-layer", "refused" if refused else f"NOT refused ({describe(proc.returncode)})", refused))

    widths = [max(len(str(r[i])) for r in rows + [("case", "category", "expected", "observed", "")]) for i in range(4)]
    widths = [min(w, 60) for w in widths]
    print(f"{'case':<{widths[0]}}  {'category':<{widths[1]}}  {'expected':<{widths[2]}}  {'observed':<{widths[3]}}  result")
    for name, cat, expect, observed, ok in rows:
        print(f"{name:<{widths[0]}}  {cat:<{widths[1]}}  {expect[:60]:<{widths[2]}}  {observed[:90]:<{widths[3]}}  {'pass' if ok else 'FAIL'}")
    failed = [r for r in rows if not r[4]]
    passed = len(rows) - len(failed)
    print()
    print(f"{passed} passed, {len(failed)} failed")
    listener.stop = udp4.stop = udp6.stop = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
