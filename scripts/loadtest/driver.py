"""Drives stateless codemode replicas (through a load balancer) with a bounded number of
concurrent clients for a bounded time, and prints throughput, p50/p99 and errors.

    python driver.py URL CLIENTS SECONDS

Each client is a thread with one keep-alive HTTP/1.1 connection, sending `tools/call
execute` requests with no MCP session (what a stateless replica answers on its own).
The program is the speed issue's: two `math.add` calls in `Promise.all`, JSON back.
"""

import http.client
import json
import sys
import threading
import time
import urllib.parse

PROGRAM = "const [a, b] = await Promise.all([tools.math.add({ a: 1, b: 2 }), tools.math.add({ a: 3, b: 4 })]); return { a, b };"
EXPECTED = '{"a":"3","b":"7"}'


def client(url, deadline, latencies, errors, lock):
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "execute", "arguments": {"code": PROGRAM}}})
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
    mine, failed = [], []
    while time.monotonic() < deadline:
        started = time.monotonic()
        try:
            connection.request("POST", parts.path, body, headers)
            response = connection.getresponse()
            text = response.read().decode()
            if response.status != 200:
                failed.append(f"HTTP {response.status}: {text[:200]}")
                continue
            if response.getheader("content-type", "").startswith("text/event-stream"):
                text = [line[5:].strip() for line in text.splitlines() if line.startswith("data:") and line[5:].strip()][-1]
            result = json.loads(text)["result"]
            answer = "".join(c.get("text", "") for c in result["content"])
            if result.get("isError") or answer != EXPECTED:
                failed.append(f"wrong answer: {answer[:200]}")
                continue
            mine.append(time.monotonic() - started)
        except Exception as e:  # a broken connection is an error to count, then go on
            failed.append(f"{type(e).__name__}: {e}")
            connection.close()
            connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    with lock:
        latencies.extend(mine)
        errors.extend(failed)


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(p / 100 * len(sorted_values)))]


def main():
    url, clients, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    latencies, errors, lock = [], [], threading.Lock()
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=client, args=(url, deadline, latencies, errors, lock)) for _ in range(clients)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    latencies.sort()
    print(json.dumps({
        "clients": clients,
        "seconds": round(elapsed, 1),
        "programs": len(latencies),
        "per_second": round(len(latencies) / elapsed, 1),
        "p50_ms": round(percentile(latencies, 50) * 1000, 2),
        "p99_ms": round(percentile(latencies, 99) * 1000, 2),
        "errors": len(errors),
        "first_errors": errors[:3],
    }))


main()
