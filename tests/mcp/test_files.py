"""Workspace files and artifacts behind codemode's MCP server, driven by the official MCP
Python SDK, whose `list_roots_callback` gives a temporary folder as the client's root.

Run by scripts/test-mcp-server.sh:

    python tests/mcp/test_files.py path/to/codemode

- seed 003's own `save_note` (tests/plugins/files/notes.ts, the document's code
  unchanged) writes its note beneath the root, where it is on disk with the exact
  content; `host.workspace.read` and `.list` return it;
- a path with `..` out of the root, an absolute path, and a symbolic link inside the
  root that leads out are each refused with the error naming the root (EXDEV), and
  nothing outside changes;
- the permission the script derives (`host:workspace:write`) is shown by
  `codemode tools`, the load report of whoever enables the plugin;
- Podcode's `ctx.mainCwd` is the root;
- plico's `ctx.artifacts` writes a PNG and a CSV, reads them back and lists them; the
  agent receives each as a `resource_link` with its media type, and `resources/read`
  gives back the exact bytes; `resources/list` lists them;
- over `codemode serve` (HTTP) a client names paths on the server: plugins work in its
  files only within `[server] workspace_roots` (refused, naming the setting, while it is
  unset; the note is written once the root lies within it);
- three sessions of `codemode serve`, each with its own root, call one plugin
  (tests/plugins/files/tenants.ts) at the same time: each read is served in its own
  session's root; work a handler leaves running after it answered, and a handler whose
  call the host gave up, are refused (`host.workspace`, `host.llm`) while another
  session's call of the plugin runs, and nothing lands in either session's root;
- a client's workspace swapped for a link to outside the roots while its program runs:
  the program's reads and writes are refused (the root was opened once, when the
  request came), the next request is refused, and nothing outside is read or created.
"""

import base64
import contextlib
import json
import os
import socket
import subprocess
import tempfile
import threading

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

import harness
from harness import CODEMODE, ROOT, check

FILES = os.path.join(ROOT, "tests/plugins/files")
PNG = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0xFF, 3]


def config_file():
    path = os.path.join(tempfile.mkdtemp(prefix="codemode-files-test-"), "codemode.toml")
    with open(path, "w") as f:
        f.write(f"""[[plugin]]
name = "notes"
kind = "javascript"
path = "{FILES}/notes.ts"

[[plugin]]
name = "charts"
kind = "javascript"
path = "{FILES}/plico"

[[plugin]]
name = "where"
kind = "javascript"
path = "{FILES}/podcode/where.mjs"

[[plugin]]
name = "tenants"
kind = "javascript"
path = "{FILES}/tenants.ts"
""")
    return path


def text_of(result):
    return [c.text for c in result.content if c.type == "text"]


async def execute(session, code):
    result = await session.call_tool("execute", {"code": code})
    check(not result.is_error, f"{code}: {text_of(result)}")
    text = text_of(result)[0]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def outside_error(op, path, root):
    return (
        f'host.workspace.{op}: the path "{path}" leaves the workspace {root} (EXDEV): paths are resolved beneath it, '
        'so ".." out of it, an absolute path, or a symbolic link that leads out is refused'
    )


def parsed(call):
    """A program that returns what the tool call gives, parsed from its JSON text."""
    return f"const v = await {call}; return typeof v === 'string' ? JSON.parse(v) : v"


def caught(call):
    return f"try {{ await {call}; return 'not refused' }} catch (e) {{ return e.message }}"


async def workspace_and_artifacts(config):
    root = tempfile.mkdtemp(prefix="codemode-files-root-")
    outside = tempfile.mkdtemp(prefix="codemode-files-outside-")
    secret = os.path.join(outside, "secret.txt")
    with open(secret, "w") as f:
        f.write("secret")
    os.symlink(outside, os.path.join(root, "escape"))

    async def on_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri=f"file://{root}", name="work")])

    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, list_roots_callback=on_roots) as session:
            init = await session.initialize()
            check(init.capabilities.resources is not None, f"the server offers resources: {init.capabilities}")
            await anyio.sleep(0.3)  # codemode reads the roots after `initialized`

            # The document's save_note writes beneath the root.
            saved = await execute(session, parsed('tools.notes.save_note({ title: "Shopping List!", text: "milk\\neggs" })'))
            check(saved == {"saved": "notes/shopping-list-.md"}, f"save_note: {saved}")
            with open(os.path.join(root, "notes/shopping-list-.md")) as f:
                check(f.read() == "milk\neggs", "the note is on disk with the exact content")
            read_back = await execute(session, parsed('tools.notes.read_note({ path: "notes/shopping-list-.md" })'))
            check(read_back == {"text": "milk\neggs"}, f"host.workspace.read: {read_back}")
            listed = await execute(session, parsed('tools.notes.list_notes({ path: "notes" })'))
            check(listed == {"entries": [{"name": "shopping-list-.md", "kind": "file"}]}, f"host.workspace.list: {listed}")
            listed = await execute(session, parsed("tools.notes.list_notes({})"))
            check(listed == {"entries": [{"name": "escape", "kind": "symlink"}, {"name": "notes", "kind": "dir"}]}, f"the root's listing: {listed}")

            # Out of the root: `..`, an absolute path, a symbolic link that leads out.
            up = f"../{os.path.basename(outside)}/secret.txt"
            refused = await execute(session, caught(f"tools.notes.read_note({{ path: {json.dumps(up)} }})"))
            check(refused == outside_error("read", up, root), f"`..` out of the root: {refused}")
            refused = await execute(session, caught(f"tools.notes.write_file({{ path: {json.dumps(secret)}, content: 'x' }})"))
            check(refused == outside_error("write", secret, root), f"an absolute path: {refused}")
            refused = await execute(session, caught('tools.notes.read_note({ path: "escape/secret.txt" })'))
            check(refused == outside_error("read", "escape/secret.txt", root), f"a symlink that leads out: {refused}")
            refused = await execute(session, caught('tools.notes.write_file({ path: "escape/new.txt", content: "x" })'))
            check(refused == outside_error("write", "escape/new.txt", root), f"a write through the symlink: {refused}")
            with open(secret) as f:
                check(f.read() == "secret", "the file outside is untouched")
            check(sorted(os.listdir(outside)) == ["secret.txt"], f"nothing was created outside: {os.listdir(outside)}")

            # Podcode's mainCwd is the root.
            cwd = await execute(session, "return await tools.where.main_cwd({})")
            check(cwd == root, f"mainCwd: {cwd!r}")

            # plico's ctx.artifacts: kept for the session, given to the agent as resources.
            result = await session.call_tool("execute", {"code": parsed("tools.charts.chart({ rows: 3 })")})
            check(not result.is_error, f"chart: {text_of(result)}")
            value = json.loads(text_of(result)[0])
            check(value["readBack"] == "x,y\n0,0\n1,1\n2,4", f"ctx.artifacts.read gives the text back: {value}")
            check(value["bytes"] == PNG, f"ctx.artifacts.read gives the bytes back: {value['bytes']}")
            check(value["listed"] == ["charts/chart.png image/png 11", "charts/data.csv text/csv 15"], f"ctx.artifacts.list: {value['listed']}")
            check(value["image"]["mimeType"] == "image/png" and value["image"]["size"] == 11, f"write answers the artifact: {value['image']}")
            links = [c for c in result.content if c.type == "resource_link"]
            check([(l.name, l.mime_type) for l in links] == [("charts/chart.png", "image/png"), ("charts/data.csv", "text/csv")], f"the artifacts arrive as resource links: {links}")
            check(str(links[0].uri) == value["image"]["uri"], f"the link is the artifact's URI: {links[0].uri}")
            image = (await session.read_resource(links[0].uri)).contents[0]
            check(image.mime_type == "image/png" and base64.b64decode(image.blob) == bytes(PNG), f"resources/read gives the exact bytes: {image}")
            data = (await session.read_resource(links[1].uri)).contents[0]
            check(data.mime_type == "text/csv" and data.text == "x,y\n0,0\n1,1\n2,4", f"and the text: {data}")
            resources = (await session.list_resources()).resources
            check(sorted((r.name, r.mime_type, r.size) for r in resources) == [("charts/chart.png", "image/png", 11), ("charts/data.csv", "text/csv", 15)], f"resources/list: {resources}")
            # A later program that writes nothing carries no links.
            result = await session.call_tool("execute", {"code": "return 1"})
            check([c.type for c in result.content] == ["text"], f"no artifacts, no links: {result.content}")
            try:
                await session.read_resource("artifact://s999/charts/chart.png")
                check(False, "another session's artifact is not served")
            except Exception as e:  # the SDK raises McpError
                check("this session has no resource artifact://s999/charts/chart.png" in str(e), f"unknown resource: {e}")

    # Another session does not see these artifacts.
    params = StdioServerParameters(command=CODEMODE, args=["mcp", "--config", config])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            check((await session.list_resources()).resources == [], "a new session starts with no artifacts")
            refused = await execute(session, caught('tools.notes.read_note({ path: "a.txt" })'))
            check(refused == "host.workspace.read: this call has no workspace: an MCP client gives one as its first file:// root (roots/list) or as _meta.workspace", f"no roots, no workspace: {refused}")


def permission_shown(config):
    out = subprocess.run([CODEMODE, "tools", "--config", config], capture_output=True, text=True, timeout=120)
    check(out.returncode == 0, f"codemode tools: {out.stderr}")
    shown = out.stdout + out.stderr
    check("plugin notes (note): permission host:workspace:write: can write the agent's files (host.workspace.write, beneath the session's workspace)" in shown, f"the derived permission is shown: {shown}")
    check("plugin charts (note): permission" not in shown, f"plico derives none: {shown}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def remote_workspace(config):
    """codemode serve: the client's root is a path on the server, allowed only within the operator's roots."""
    parent = tempfile.mkdtemp(prefix="codemode-files-remote-")
    root = os.path.join(parent, "work")
    os.mkdir(root)

    async def on_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri=f"file://{root}", name="work")])

    with open(config) as f:
        plugins = f.read()
    for allowed in (None, parent):
        path = os.path.join(tempfile.mkdtemp(prefix="codemode-files-serve-"), "codemode.toml")
        with open(path, "w") as f:
            f.write((f'[server]\nworkspace_roots = ["{allowed}"]\n\n' if allowed else "") + plugins)
        port = free_port()
        env = dict(os.environ)
        env.pop("CODEMODE_TOKEN", None)
        server = subprocess.Popen([CODEMODE, "serve", "--config", path, "--listen", f"127.0.0.1:{port}"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        try:
            for line in server.stderr:
                if "serving MCP on" in line:
                    break
            threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_):
                async with ClientSession(read, write, list_roots_callback=on_roots) as session:
                    await session.initialize()
                    await anyio.sleep(0.3)  # codemode reads the roots after `initialized`
                    answer = await execute(session, caught("tools.notes.save_note({ title: 'Remote', text: 'from afar' })"))
                    note = os.path.join(root, "notes", "remote.md")
                    if allowed is None:
                        check(answer == f"host.workspace.write: the client's workspace {root} is a path on the server, and codemode serve lets plugins work in a client's files only within its [server] workspace_roots, which are not set", f"serve without workspace_roots refuses: {answer}")
                        check(not os.path.exists(note), "nothing was written")
                    else:
                        check(answer == "not refused", f"within workspace_roots the note is written: {answer}")
                        with open(note) as f:
                            check(f.read() == "from afar", "the note is on disk")
        finally:
            server.terminate()
            server.wait(timeout=10)


def serving(config, allowed, limits=""):
    """`codemode serve` of `config` with `[server] workspace_roots = [allowed]` and `[limits]`: (process, url)."""
    with open(config) as f:
        plugins = f.read()
    path = os.path.join(tempfile.mkdtemp(prefix="codemode-files-serve-"), "codemode.toml")
    with open(path, "w") as f:
        f.write(f'[server]\nworkspace_roots = ["{allowed}"]\n\n[limits]\n{limits}\n' + plugins)
    port = free_port()
    env = dict(os.environ)
    env.pop("CODEMODE_TOKEN", None)
    server = subprocess.Popen([CODEMODE, "serve", "--config", path, "--listen", f"127.0.0.1:{port}"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    for line in server.stderr:
        if "serving MCP on" in line:
            break
    threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
    return server, f"http://127.0.0.1:{port}/mcp"


async def tenants_on_one_plugin(config):
    """Three sessions, three roots, one plugin process: no call acts for another."""
    parent = tempfile.mkdtemp(prefix="codemode-files-tenants-")
    roots = []
    for name in ("a", "b", "c"):
        root = os.path.join(parent, name)
        os.mkdir(root)
        with open(os.path.join(root, "who.txt"), "w") as f:
            f.write(f"tenant {name}")
        roots.append(root)
    # A program's CPU step is short, for a program that spins while its call sleeps.
    server, url = serving(config, parent, "cpu_step_ms = 300")
    asked = []

    async def model(context, params):
        asked.append(params)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="no"), model="m")

    def listed(root):
        return sorted(os.listdir(root))

    try:
        async with contextlib.AsyncExitStack() as stack:
            sessions = []
            for root in roots:
                async def on_roots(context, root=root):
                    return types.ListRootsResult(roots=[types.Root(uri=f"file://{root}", name="work")])
                read, write, *_ = await stack.enter_async_context(streamable_http_client(url))
                session = await stack.enter_async_context(ClientSession(read, write, list_roots_callback=on_roots, sampling_callback=model))
                await session.initialize()
                sessions.append(session)
            await anyio.sleep(0.3)  # codemode reads the roots after `initialized`

            # Three reads in flight at once, one per session: each in its own root.
            got = {}

            async def read_in(i):
                got[i] = await execute(sessions[i], parsed("tools.tenants.read_after({ path: 'who.txt', ms: 400 })"))
            async with anyio.create_task_group() as group:
                for i in range(3):
                    group.start_soon(read_in, i)
            check(got == {i: {"text": f"tenant {n}"} for i, n in enumerate("abc")}, f"each session's read was served in its own root: {got}")

            # Work left running after its call answered, while another session's call runs.
            answered = await execute(sessions[0], "return await tools.tenants.write_later({ path: 'late.txt', ms: 200 })")
            check(answered == "answered", f"write_later answered at once: {answered}")
            woke = await execute(sessions[1], "return await tools.tenants.read_after({ path: 'who.txt', ms: 700 })")
            check(woke == {"text": "tenant b"}, f"b's call ran meanwhile: {woke}")
            left = await execute(sessions[2], "return await tools.tenants.what_was_left({})")
            over = "after that call answered: what a handler leaves running acts for its own call alone, and that call is over"
            check(left == [f"host.workspace.write was used by code of the call of tenants.write_later {over}",
                           f"host.llm was used by code of the call of tenants.write_later {over}"], f"the late work was refused: {left}")

            # A handler whose call the host gave up (its program hit the CPU limit).
            spun = await sessions[0].call_tool("execute", {"code": "tools.tenants.sleep_then_write({ path: 'given-up.txt', ms: 600 }); while (true) {}"})
            check(spun.is_error and "CPU" in text_of(spun)[0], f"the program hit its CPU limit: {text_of(spun)}")
            woke = await execute(sessions[1], "return await tools.tenants.read_after({ path: 'who.txt', ms: 900 })")
            check(woke == {"text": "tenant b"}, f"b's call ran meanwhile: {woke}")
            left = await execute(sessions[2], "return await tools.tenants.what_was_left({})")
            check(left == ["host.workspace.write was used by code of the call of tenants.sleep_then_write after that call was given up by the host: what a handler leaves running acts for its own call alone, and that call is over"], f"the given-up handler was refused: {left}")
            for root in roots:
                check(listed(root) == ["who.txt"], f"nothing was written into {root}: {listed(root)}")
            check(asked == [], f"no session's client was asked a late question: {asked}")
    finally:
        server.terminate()
        server.wait(timeout=10)


async def swapped_root(config):
    """codemode serve: a client's workspace (within the roots when its request came) is
    swapped for a link to a folder outside the roots while its program runs; the
    program's reads and writes are refused, and nothing outside is read or created."""
    parent = tempfile.mkdtemp(prefix="codemode-files-swap-")
    allowed, outside = os.path.join(parent, "roots"), os.path.join(parent, "outside")
    root, moved = os.path.join(allowed, "work"), os.path.join(allowed, "moved")
    for folder, text in ((root, "inside"), (outside, "outside secret")):
        os.makedirs(folder)
        with open(os.path.join(folder, "who.txt"), "w") as f:
            f.write(text)
    server, url = serving(config, allowed)

    def swap():
        os.rename(root, moved)
        os.symlink(outside, root)

    def restore():
        os.remove(root)
        os.rename(moved, root)

    async def on_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri=f"file://{root}", name="work")])

    replaced = (f"the workspace {root} was replaced while the program ran (its name now leads to another folder or a link): "
                f"codemode works only in the folder it opened when the request came, and reads and writes nothing through "
                f"the new one; send the request again to work in what {root} names now")
    try:
        async with streamable_http_client(url) as (read, write, *_):
            async with ClientSession(read, write, list_roots_callback=on_roots) as session:
                await session.initialize()
                await anyio.sleep(0.3)  # codemode reads the roots after `initialized`
                check(await execute(session, parsed("tools.tenants.read_after({ path: 'who.txt', ms: 0 })")) == {"text": "inside"},
                      "the workspace is read before the swap")
                got = {}

                async def read_late():
                    got["read"] = await execute(session, caught("tools.tenants.read_after({ path: 'who.txt', ms: 800 })"))
                async with anyio.create_task_group() as group:
                    group.start_soon(read_late)
                    await anyio.sleep(0.3)
                    swap()
                check(got["read"] == f"host.workspace.read: {replaced}", f"a read after the swap is refused: {got}")
                restore()

                async def write_late():
                    got["write"] = await execute(session, "await tools.tenants.sleep_then_write({ path: 'planted.txt', ms: 800 }); return await tools.tenants.what_was_left({})")
                async with anyio.create_task_group() as group:
                    group.start_soon(write_late)
                    await anyio.sleep(0.3)
                    swap()
                check(got["write"] == [f"host.workspace.write: {replaced}"], f"a write after the swap is refused: {got}")
                # The next request finds the link and is refused at once.
                later = await execute(session, caught("tools.tenants.read_after({ path: 'who.txt', ms: 0 })"))
                check(later == f"host.workspace.read: the client's workspace {root} is not within the server's [server] workspace_roots ({allowed})",
                      f"a request made after the swap is refused: {later}")
                check(sorted(os.listdir(outside)) == ["who.txt"], f"nothing was created outside: {os.listdir(outside)}")
                check(sorted(os.listdir(moved)) == ["who.txt"], f"nor in the moved folder: {os.listdir(moved)}")
    finally:
        server.terminate()
        server.wait(timeout=10)


async def main():
    config = config_file()
    permission_shown(config)
    await workspace_and_artifacts(config)
    await remote_workspace(config)
    await tenants_on_one_plugin(config)
    await swapped_root(config)
    print(f"workspace files and artifacts over MCP: {harness.CHECKS} checks passed")


if __name__ == "__main__":
    anyio.run(main)
