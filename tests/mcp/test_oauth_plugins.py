"""OAuth for a remote MCP server, end to end: codemode against an MCP server whose
authorization server is the official MCP Python SDK's (tests/plugins/mcp_oauth_server.py:
metadata, dynamic client registration, PKCE, refresh-token rotation), with access tokens
that live TOKEN_SECONDS seconds.

Run by scripts/test-mcp-server.sh:

    python tests/mcp/test_oauth_plugins.py path/to/codemode

Checked, in the order a person meets them:
- before any login, the plugin is unavailable and the message names `codemode auth login`;
- `codemode auth login` registers, sends the browser to the authorization server and
  finishes on the loopback redirect (tests/mcp/browser.py plays the browser);
- the tokens are in the user's data folder, in a file of mode 0600 in a folder of 0700;
- `codemode auth status` says logged in, when the token expires, and that it renews;
- programs call the server with the token, in later processes too;
- once the access token has expired, the next program's connection refreshes it (a
  `refresh` grant at the server, no new login) and saves the rotated tokens;
- `codemode auth logout` forgets them, and the plugin asks for a login again.
"""

import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
import time

import browser
import harness
from harness import CODEMODE, ROOT, check

TOKEN_SECONDS = 4


def start_server(folder):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    events = os.path.join(folder, "events.jsonl")
    open(events, "w").close()
    log = open(os.path.join(folder, "server.log"), "w")
    env = dict(os.environ, TOKEN_SECONDS=str(TOKEN_SECONDS))
    server = subprocess.Popen([sys.executable, "-W", "ignore", os.path.join(ROOT, "tests/plugins/mcp_oauth_server.py"), str(port), events], env=env, stdout=log, stderr=log)
    deadline = time.time() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return server, f"http://127.0.0.1:{port}/mcp", events
        except OSError:
            check(time.time() < deadline and server.poll() is None, f"the OAuth test server started (its log: {log.name})")
            time.sleep(0.1)


def grants(events):
    with open(events) as f:
        return [json.loads(line)["event"] for line in f if line.strip()]


def main():
    folder = tempfile.mkdtemp(prefix="codemode-oauth-test-")
    server, url, events = start_server(folder)
    try:
        config = os.path.join(folder, "codemode.toml")
        with open(config, "w") as f:
            f.write(f'[[plugin]]\nname = "secure"\nkind = "mcp"\nurl = "{url}"\n')
        env = dict(os.environ, XDG_DATA_HOME=os.path.join(folder, "data"))
        run = lambda: subprocess.run([CODEMODE, "run", "--config", config, "-"], input="return JSON.parse(await tools.secure.whoami())", capture_output=True, text=True, env=env, timeout=60)
        auth = lambda *args: subprocess.run([CODEMODE, "auth", *args, "--config", config], capture_output=True, text=True, env=env, timeout=60)

        before = run()
        check(before.returncode == 1 and "the server needs authorization; run `codemode auth login secure`" in before.stdout, f"before the login: {before.stdout} {before.stderr}")

        code, out, errors = browser.login(CODEMODE, config, "secure", env)
        check(code == 0 and "plugin secure is authorized" in out and "(registered now)" in out, f"login: {code} {out} {errors}")
        check("open this link in a browser" in errors and "code_challenge_method=S256" in errors, f"the login printed the link, with PKCE: {errors}")
        check(grants(events) == ["register", "code"], f"one registration and one code exchange: {grants(events)}")

        oauth_folder = os.path.join(folder, "data", "codemode", "oauth")
        files = [f for f in os.listdir(oauth_folder) if f.endswith(".json")]
        check(len(files) == 1 and files[0].startswith("127.0.0.1-"), f"one token file, named after the server: {files}")
        token_file = os.path.join(oauth_folder, files[0])
        check(stat.S_IMODE(os.stat(token_file).st_mode) == 0o600, "the token file is private (0600)")
        check(stat.S_IMODE(os.stat(oauth_folder).st_mode) == 0o700, "its folder is private (0700)")
        first_token = json.load(open(token_file))["credentials"]["token_response"]["access_token"]

        status = auth("status")
        check(status.returncode == 0 and "logged in: the token expires in" in status.stdout and "renewed automatically" in status.stdout, f"status: {status.stdout} {status.stderr}")

        called = run()
        check(called.returncode == 0 and json.loads(called.stdout)["scopes"] == ["notes"], f"a program calls with the token: {called.stdout} {called.stderr}")
        check(grants(events) == ["register", "code"], f"a token still valid is not refreshed: {grants(events)}")

        time.sleep(TOKEN_SECONDS + 1)
        refreshed = run()
        check(refreshed.returncode == 0 and json.loads(refreshed.stdout)["scopes"] == ["notes"], f"after the token expired: {refreshed.stdout} {refreshed.stderr}")
        check(grants(events) == ["register", "code", "refresh"], f"the expired token was refreshed, with no new login: {grants(events)}")
        second_token = json.load(open(token_file))["credentials"]["token_response"]["access_token"]
        check(second_token != first_token, "the rotated tokens were saved")
        check(stat.S_IMODE(os.stat(token_file).st_mode) == 0o600, "the file stays private after the refresh")

        out = auth("logout", "secure")
        check(out.returncode == 0 and "forgot the tokens of plugin secure" in out.stdout, f"logout: {out.stdout} {out.stderr}")
        check(not os.path.exists(token_file), "logout removed the token file")
        after = run()
        check("run `codemode auth login secure`" in after.stdout, f"after logout the plugin asks for a login again: {after.stdout}")
        wrong = auth("login", "nothere")
        check(wrong.returncode == 2 and "there is no plugin nothere; MCP servers at a `url` here: secure" in wrong.stderr, f"login names the plugins it can: {wrong.stderr}")
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"OAuth plugin test: {harness.CHECKS} checks passed")


if __name__ == "__main__":
    main()
