#!/usr/bin/env python3
"""codemode as the client in the MCP conformance suite's client scenarios.

The suite starts a test server for a scenario and runs `client.py SERVER_URL` with
MCP_CONFORMANCE_SCENARIO (and, for some scenarios, MCP_CONFORMANCE_CONTEXT) set. This
adapter does what a person would do with codemode against that server, using only
codemode's own commands:

1. write a configuration with the server as a `url` plugin named `conformance` (with the
   `oauth` table a person would write: the pre-registered client the scenario's context
   gives, and a Client ID Metadata Document URL);
2. for `auth/` scenarios, `codemode auth login conformance`, with this script as the
   browser: it opens the printed link without following the redirect, then follows it to
   codemode's loopback listener, as a browser would after the person clicks "allow";
3. `codemode tools --json` (connect, initialize, list the tools);
4. `codemode run --accept-defaults` on a program that calls every tool, with inputs made
   from each tool's schema;
5. when a call is refused for lack of a permission (HTTP 403 insufficient_scope), codemode
   says to log in again: the adapter does, and runs the program again (at most three
   logins, as a person would give up).

Nothing here speaks MCP: every request the server sees comes from codemode.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "mcp"))
import browser  # noqa: E402  (tests/mcp/browser.py: plays the person's browser)
CODEMODE = os.environ.get("CODEMODE_BIN", os.path.join(ROOT, "target", "release", "codemode"))
PLUGIN = "conformance"
# The suite's fixed Client ID Metadata Document URL (its test authorization server accepts it).
CIMD_URL = "https://conformance-test.local/client-metadata.json"
MAX_LOGINS = 3


def log(*parts):
    print("client.py:", *parts, file=sys.stderr, flush=True)


def toml_string(text):
    return json.dumps(text)


def write_config(folder, url, scenario, context):
    lines = ["[[plugin]]", f'name = "{PLUGIN}"', 'kind = "mcp"', f"url = {toml_string(url)}", "timeout_ms = 20000"]
    if scenario.startswith("auth/"):
        lines.append("[plugin.oauth]")
        lines.append(f"client_metadata_url = {toml_string(CIMD_URL)}")
        if context.get("client_id"):
            lines.append(f"client_id = {toml_string(context['client_id'])}")
        if context.get("client_secret"):
            # As a person would: the secret from the environment, not in the file.
            os.environ["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
            lines.append('client_secret = { env = "CONFORMANCE_CLIENT_SECRET" }')
    path = os.path.join(folder, "codemode.toml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def login(config, env):
    """`codemode auth login`, with tests/mcp/browser.py in the browser's place."""
    code, out, errors = browser.login(CODEMODE, config, PLUGIN, env)
    log("login:", out.strip() or errors.strip())
    return code == 0


def example(schema):
    """A value for a schema: its default, its first choice, or a plain one of its type."""
    if not isinstance(schema, dict):
        return None
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object":
        props = schema.get("properties", {})
        return {k: example(v) for k, v in props.items() if k in schema.get("required", [])}
    return {"string": "test", "number": 1, "integer": 1, "boolean": True, "array": []}.get(kind)


def program_for(tools):
    calls = []
    for entry in tools:
        tool = entry["tool"]
        args = example(tool.get("inputSchema", {"type": "object"})) or {}
        calls.append((tool["name"], args))
    body = ["const results = {};"]
    for name, args in calls:
        body.append(
            f"try {{ results[{json.dumps(name)}] = await tools.{PLUGIN}[{json.dumps(name)}]({json.dumps(args)}); }}"
            f" catch (e) {{ results[{json.dumps(name)}] = 'failed: ' + e.message; }}"
        )
    body.append("return results;")
    return "\n".join(body)


def main():
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    folder = tempfile.mkdtemp(prefix="codemode-conformance-")
    config = write_config(folder, url, scenario, context)
    env = dict(os.environ, XDG_DATA_HOME=folder, CODEMODE_LOG=os.environ.get("CODEMODE_LOG", "warn"))
    logins = 0
    if scenario.startswith("auth/"):
        logins += 1
        if not login(config, env):
            return 1
    for attempt in range(MAX_LOGINS + 1):
        listed = subprocess.run([CODEMODE, "tools", "--config", config, "--json"], capture_output=True, text=True, env=env, timeout=60)
        log("tools:", listed.stderr.strip())
        tools = json.loads(listed.stdout or "[]")
        run = subprocess.run(
            [CODEMODE, "run", "--config", config, "--accept-defaults", "-"],
            input=program_for(tools), capture_output=True, text=True, env=env, timeout=60,
        )
        log("run:", run.returncode, run.stdout.strip(), run.stderr.strip())
        refused = re.search(rf"codemode auth login {PLUGIN}", run.stdout + listed.stderr)
        if not refused:
            return 0 if run.returncode == 0 and listed.returncode == 0 else 1
        if logins >= MAX_LOGINS:
            log(f"still refused after {logins} logins: giving up, as a person would")
            return 0
        logins += 1
        if not login(config, env):
            return 1
    return 1


if __name__ == "__main__":
    sys.exit(main())
