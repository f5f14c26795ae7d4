"""A plain round-robin HTTP proxy for the replica tests: every request goes to the next
backend in turn, whatever it is (no stickiness, no knowledge of MCP), as an ordinary
load balancer in front of stateless replicas would send it.

    python3 round_robin.py LISTEN_PORT BACKEND_URL...

Prints "listening on PORT" when ready. Answers are relayed whole once the backend has
sent them (enough for requests and their final answers; streamed progress arrives with
the answer)."""

import http.client
import itertools
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
BACKENDS = [urllib.parse.urlparse(url) for url in sys.argv[2:]]
turns = itertools.cycle(range(len(BACKENDS)))
lock = threading.Lock()
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization", "proxy-authenticate", "host", "content-length"}


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def relay(self):
        with lock:
            backend = BACKENDS[next(turns)]
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        try:
            conn = http.client.HTTPConnection(backend.hostname, backend.port, timeout=600)
            conn.request(self.command, self.path, body, headers)
            response = conn.getresponse()
            data = response.read()
        except OSError as e:
            self.send_response(502)
            message = f"backend {backend.netloc} unreachable: {e}".encode()
            self.send_header("content-length", str(len(message)))
            self.end_headers()
            self.wfile.write(message)
            return
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        self.send_header("x-backend", backend.netloc)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        conn.close()

    do_GET = do_POST = do_DELETE = relay


server = ThreadingHTTPServer(("127.0.0.1", PORT), Proxy)
print(f"listening on {server.server_address[1]}", flush=True)
server.serve_forever()
