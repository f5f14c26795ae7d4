// The JavaScript test plugin for host/tests/javascript_plugins.rs. Its manifest is
// written by each test (the network allowlist names the test's own HTTP server).
let aborted = [];
const dynamic = new Map();

export function activate(api) {
  const tool = (name, run, extra = {}) => api.tools.register({ name, description: `Test tool ${name}.`, run, ...extra });

  tool("echo", (input, ctx) => ({ input, context: { workspace: ctx.workspace, workspaceId: ctx.workspaceId, agentId: ctx.agentId, chatId: ctx.chatId, callId: ctx.callId, aborted: ctx.signal.aborted } }));
  tool("text", ({ text }) => text);
  tool("nothing", () => undefined);
  tool("image", () => ({ content: [{ type: "text", text: "a pixel" }, { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }] }));
  tool("every_content", () => ({
    content: [
      { type: "text", text: "hello", annotations: { audience: ["user"], priority: 0.5 }, _meta: { "example.com/id": 7 } },
      { type: "audio", data: "UklGRg==", mimeType: "audio/wav" },
      { type: "resource_link", uri: "file:///notes/a.md", name: "a.md", mimeType: "text/markdown", size: 12 },
      { type: "resource", resource: { uri: "file:///notes/b.md", mimeType: "text/markdown", text: "# B" } },
      { type: "resource", resource: { uri: "file:///c.bin", blob: "AAE=" } },
    ],
  }));
  tool("bad_content", () => ({ content: [{ type: "image", data: "iVBORw0KGgo=" }] }));
  tool("approve", (input, ctx) => ctx.approve("Delete a.txt?", { path: "a.txt" }));
  tool("mcp_error", () => ({ content: [{ type: "text", text: "the plugin says no" }], isError: true }));
  tool("throws", () => { throw new Error("broken on purpose"); });
  tool("rejects", async () => { throw new RangeError("out of range"); });
  tool("typed", ({ count }) => count * 2, { inputSchema: { type: "object", properties: { count: { type: "integer", minimum: 0 } }, required: ["count"] } });
  tool("stats", ({ good }) => (good ? { total: 3, names: ["a"] } : { total: "three" }), {
    inputSchema: { type: "object", properties: { good: { type: "boolean" } } },
    outputSchema: { type: "object", properties: { total: { type: "integer" }, names: { type: "array", items: { type: "string" } } }, required: ["total"] },
  });
  tool("wait_for_abort", (input, ctx) => new Promise((resolve) => {
    ctx.signal.addEventListener("abort", () => { aborted.push(`${ctx.signal.reason.name}: ${ctx.signal.reason.message}`); resolve("aborted"); });
  }));
  tool("aborted", () => aborted);
  tool("spin", () => { for (;;) {} });
  tool("hog", () => { const keep = []; for (;;) keep.push(new Array(100000).fill(keep.length)); });
  tool("huge", ({ mib }) => "x".repeat(mib * 1024 * 1024));
  tool("shout", ({ lines }) => { for (let i = 0; i < lines; i++) console.log(`line ${i} `.repeat(200)); return "done"; });
  tool("fetch", async ({ url, method, body }, ctx) => {
    const response = await api.net.fetch(url, { method, body, headers: { "x-test": "1" }, signal: ctx.signal });
    return { status: response.status, ok: response.ok, type: response.headers.get("content-type"), body: await response.text() };
  });
  tool("fetch_bytes", async ({ url }) => {
    const response = await api.net.fetch(url);
    const bytes = await response.bytes();
    return { bytes: Array.from(bytes), text: await response.text() };
  });
  tool("add_tool", ({ name }) => { dynamic.set(name, tool(name, () => `I am ${name}`)); return "added"; });
  tool("remove_tool", ({ name }) => { dynamic.get(name).remove(); return "removed"; });
  let count = 0;
  tool("count", () => ++count);
  tool("fire_and_forget", () => { Promise.reject(new Error("nobody listens")); return "fired"; });
  tool("web", async () => {
    const order = [];
    const started = performance.now();
    await new Promise((resolve) => {
      setTimeout(() => order.push("t30"), 30);
      setTimeout(() => { order.push("t10"); queueMicrotask(() => order.push("micro")); }, 10);
      const cancelled = setTimeout(() => order.push("cancelled"), 5);
      clearTimeout(cancelled);
      let ticks = 0;
      const interval = setInterval(() => { order.push(`i${++ticks}`); if (ticks === 2) clearInterval(interval); }, 15);
      setTimeout(resolve, 60);
    });
    const url = new URL("../b/c?x=1&y=two words#h", "https://user:pw@example.com:8443/a/index.html");
    url.searchParams.append("z", "3&4");
    url.hash = "top";
    const params = new URLSearchParams({ q: "a b", r: "ü" });
    const bytes = new TextEncoder().encode("héllo");
    const blob = new Blob(["ab", new Uint8Array([99])], { type: "Text/Plain" });
    const form = new FormData();
    form.append("file", blob, "c.txt");
    return {
      order,
      waited: performance.now() - started >= 55,
      url: url.href,
      parts: [url.protocol, url.host, url.hostname, url.port, url.pathname, url.search, url.hash, url.origin],
      params: params.toString(),
      parsed: [...new URLSearchParams("a=1&a=2&b=%20x+y").entries()],
      bytes: Array.from(bytes),
      decoded: new TextDecoder().decode(bytes),
      fatal: (() => { try { new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array([0xff])); return "decoded"; } catch (e) { return e.constructor.name; } })(),
      blob: [await blob.text(), blob.size, blob.type, form.get("file").name],
      uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(crypto.randomUUID()),
      invalid: (() => { try { new URL("not a url"); return "parsed"; } catch (e) { return e.constructor.name; } })(),
    };
  });
  tool("globals", () => [
    ...["Deno", "require", "module", "Buffer", "WebAssembly", "host", "fetch", "setTimeout", "queueMicrotask", "TextEncoder", "crypto", "process", "tools", "AbortController", "console"]
      .map((n) => `${n}:${typeof globalThis[n]}`),
    `env:${JSON.stringify(process.env)}`,
  ]);
}

globalThis.tools.simple_add = {
  description: "Adds a and b (the globalThis.tools form).",
  parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
  handler: ({ a, b }) => a + b,
};
