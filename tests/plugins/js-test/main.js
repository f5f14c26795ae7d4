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
