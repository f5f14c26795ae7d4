"""Minimal MCP clients for the hostile-work suite: JSON-RPC over `codemode mcp`'s
standard input and output, and over `codemode serve`'s streamable HTTP, written by hand
so that the suite sees every byte and every notification the server sends (the
official SDKs are tested elsewhere; here the point is counting and timing).

Both answer the server's elicitation requests through a callback, which the approval
cases use to read the exact question a person would be shown."""

import http.client
import json
import os
import queue
import subprocess
import threading
import time
import urllib.parse

PROTOCOL = "2025-11-25"


def cpu_seconds(pid):
    """User + system CPU of `pid`'s own threads (not its children), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2 :].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


class Stdio:
    """`codemode mcp` as a child, spoken to line by line."""

    def __init__(self, argv, env=None, on_elicit=None, cwd=None, unanswered=()):
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.pid = self.proc.pid
        self.lock = threading.Lock()
        self.waiting = {}
        self.notifications = []
        self.on_elicit = on_elicit
        # Requests of these methods are counted and never answered (a client that
        # leaves the server waiting).
        self.unanswered = set(unanswered)
        self.held = []
        self.next_id = 1
        self.stderr = []
        self.response_bytes = {}
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def _read(self):
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "id" in message and ("result" in message or "error" in message):
                with self.lock:
                    self.response_bytes[message["id"]] = len(line)
                    slot = self.waiting.pop(message["id"], None)
                if slot is not None:
                    slot.put(message)
            elif "method" in message and "id" in message:
                threading.Thread(target=self._answer_request, args=(message,), daemon=True).start()
            elif "method" in message:
                with self.lock:
                    self.notifications.append((time.monotonic(), message["method"], message.get("params")))
        with self.lock:
            for slot in self.waiting.values():
                slot.put({"error": {"message": "the server closed its output"}})
            self.waiting.clear()

    def _answer_request(self, message):
        if message["method"] in self.unanswered:
            with self.lock:
                self.held.append(message["id"])
            return
        if message["method"] == "elicitation/create" and self.on_elicit:
            result = self.on_elicit(message["params"])
        elif message["method"] == "roots/list":
            result = {"roots": []}
        else:
            result = None
        if result is None:
            self._send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not here"}})
        else:
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def _send(self, message):
        data = (json.dumps(message) + "\n").encode()
        with self.lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def start(self, method, params=None):
        """Sends a request without waiting: its id, and the queue its answer arrives in."""
        slot = queue.Queue()
        with self.lock:
            rid = self.next_id
            self.next_id += 1
            self.waiting[rid] = slot
        message = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        return rid, slot

    def request(self, method, params=None, timeout=120):
        rid, slot = self.start(method, params)
        answer = slot.get(timeout=timeout)
        answer["_bytes"] = self.response_bytes.get(rid, 0)
        return answer

    def notify(self, method, params=None):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    def initialize(self, elicitation=False, sampling=False):
        capabilities = {"elicitation": {"form": {}}} if elicitation else {}
        if sampling:
            capabilities["sampling"] = {}
        answer = self.request(
            "initialize",
            {"protocolVersion": PROTOCOL, "capabilities": capabilities, "clientInfo": {"name": "hostile", "version": "1"}},
        )
        self.notify("notifications/initialized")
        return answer

    def execute(self, code, timeout=120):
        return self.request("tools/call", {"name": "execute", "arguments": {"code": code}}, timeout=timeout)

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def texts(answer):
    """The text items of a tools/call answer (or the error's message)."""
    if "error" in answer:
        return ["ERROR: " + answer["error"].get("message", "")]
    return [c.get("text", "") for c in answer["result"].get("content", []) if c.get("type") == "text"]


class Http:
    """One session with `codemode serve` over streamable HTTP."""

    def __init__(self, url, token=None):
        self.url = urllib.parse.urlparse(url)
        self.token = token
        self.session = None
        self.next_id = 1

    def _post(self, message, timeout=120):
        conn = http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=timeout)
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if self.token:
            headers["authorization"] = "Bearer " + self.token
        if self.session:
            headers["mcp-session-id"] = self.session
            headers["mcp-protocol-version"] = PROTOCOL
        conn.request("POST", self.url.path, json.dumps(message), headers)
        response = conn.getresponse()
        body = response.read().decode("utf-8", "replace")
        session = response.getheader("mcp-session-id")
        conn.close()
        return response.status, session, body

    def request(self, method, params=None, timeout=120):
        rid = self.next_id
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}
        status, session, body = self._post(message, timeout)
        if session and not self.session:
            self.session = session
        for line in body.splitlines():
            if line.startswith("data:"):
                data = line[5:].strip()
                if not data:
                    continue
                parsed = json.loads(data)
                if parsed.get("id") == rid:
                    return parsed
        if body.startswith("{"):
            return json.loads(body)
        return {"error": {"message": f"HTTP {status}: {body[:200]}"}}

    def initialize(self):
        answer = self.request(
            "initialize",
            {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "hostile", "version": "1"}},
        )
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def execute(self, code, timeout=120):
        return self.request("tools/call", {"name": "execute", "arguments": {"code": code}}, timeout=timeout)


def get(url, timeout=5):
    """(status, body, seconds) of a GET."""
    parsed = urllib.parse.urlparse(url)
    started = time.monotonic()
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=timeout)
    try:
        conn.request("GET", parsed.path)
        response = conn.getresponse()
        body = response.read()
        return response.status, body, time.monotonic() - started
    finally:
        conn.close()
