// The JavaScript side of a plugin runtime, evaluated once before the plugin's modules.
//
// It takes the plugin ops out of Deno.core, builds `console`, `AbortController`,
// `AbortSignal` and the `globalThis.tools` registry, strips the rest of the host's
// globals, and registers the driver that Rust calls with the main module's namespace.
// The driver calls `activate(api)`, collects `globalThis.tools.<name>` registrations,
// then serves the host's JSON-RPC requests one line at a time: initialize, tools/list,
// tool/call, tool/cancel, and the answers to the plugin's own host/fetch requests.
(function pluginRuntime() {
  "use strict";
  const {
    op_plugin_register_driver: opRegisterDriver,
    op_plugin_setup: opSetup,
    op_plugin_recv: opRecv,
    op_plugin_answer: opAnswer,
    op_plugin_send: opSend,
    op_plugin_log: opLog,
  } = globalThis.Deno.core.ops;
  const core = globalThis.Deno.core;

  const setup = opSetup();
  const PLUGIN = setup.plugin;
  const JSONStringify = JSON.stringify;
  const JSONParse = JSON.parse;
  const ObjectFreeze = Object.freeze;
  const ObjectKeys = Object.keys;
  const ObjectDefineProperty = Object.defineProperty;
  const ArrayIsArray = Array.isArray;
  const MapCtor = Map;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const PromiseCtor = Promise;
  const StringCtor = String;
  const RegExpTest = RegExp.prototype.test;
  const ReflectApply = Reflect.apply;
  const call = (fn, self, ...args) => ReflectApply(fn, self, args);

  // ---------------------------------------------------------------- console
  // Levels: 0 log, 1 debug, 2 warn, 3 error. The host logs them with the plugin's name.
  function show(value) {
    if (typeof value === "string") return value;
    if (value instanceof ErrorCtor) return value.stack || `${value.name}: ${value.message}`;
    try {
      const text = JSONStringify(value);
      return text === undefined ? StringCtor(value) : text;
    } catch {
      return StringCtor(value);
    }
  }
  const consoleObject = {};
  for (const [name, level] of [["log", 0], ["info", 0], ["debug", 1], ["trace", 1], ["warn", 2], ["error", 3]]) {
    consoleObject[name] = (...args) => {
      const parts = [];
      for (let i = 0; i < args.length; i++) parts.push(show(args[i]));
      opLog(level, parts.join(" "));
    };
  }

  // ------------------------------------------------------- abort signalling
  function abortError(reason) {
    const e = new ErrorCtor(typeof reason === "string" ? reason : "the operation was aborted");
    e.name = "AbortError";
    return e;
  }
  const signalState = new WeakMap();
  class AbortSignal {
    constructor(key) {
      if (key !== signalState) throw new TypeErrorCtor("AbortSignal is made by an AbortController");
      signalState.set(this, { aborted: false, reason: undefined, listeners: [] });
      this.onabort = null;
    }
    get aborted() { return signalState.get(this).aborted; }
    get reason() { return signalState.get(this).reason; }
    throwIfAborted() { if (this.aborted) throw this.reason; }
    addEventListener(type, listener, options) {
      if (type !== "abort" || typeof listener !== "function") return;
      signalState.get(this).listeners.push({ listener, once: !!(options && options.once) });
    }
    removeEventListener(type, listener) {
      const s = signalState.get(this);
      s.listeners = s.listeners.filter((l) => l.listener !== listener);
    }
    static abort(reason) {
      const c = new AbortController();
      c.abort(reason);
      return c.signal;
    }
  }
  class AbortController {
    #signal = new AbortSignal(signalState);
    get signal() { return this.#signal; }
    abort(reason) {
      const s = signalState.get(this.#signal);
      if (s.aborted) return;
      s.aborted = true;
      s.reason = reason === undefined ? abortError() : reason;
      const event = { type: "abort", target: this.#signal };
      const listeners = s.listeners;
      s.listeners = [];
      for (const fn of [this.#signal.onabort, ...listeners.map((l) => l.listener)]) {
        if (typeof fn !== "function") continue;
        try { call(fn, this.#signal, event); } catch (e) { consoleObject.error("an abort listener threw:", e); }
      }
    }
  }

  // ------------------------------------------------------------ host stream
  const answer = (id, result) => opAnswer(JSONStringify(id), JSONStringify({ jsonrpc: "2.0", id, result }));
  const refuse = (id, code, message) => opAnswer(JSONStringify(id), JSONStringify({ jsonrpc: "2.0", id, error: { code, message } }));
  const notify = (method, params) => opSend(JSONStringify(params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params }));

  // Requests this plugin made to the host (host/fetch), by id.
  const hostRequests = new MapCtor();
  let nextRequest = 0;
  function askHost(method, params, signal) {
    if (signal && signal.aborted) return PromiseCtor.reject(signal.reason);
    const id = `${method}-${++nextRequest}`;
    return new PromiseCtor((resolve, reject) => {
      hostRequests.set(id, { resolve, reject });
      if (signal) {
        signal.addEventListener("abort", () => {
          if (!hostRequests.delete(id)) return;
          notify("host/cancel", { id });
          reject(signal.reason);
        }, { once: true });
      }
      opSend(JSONStringify({ jsonrpc: "2.0", id, method, params }));
    });
  }

  // ------------------------------------------------------------------ fetch
  function decodeBase64(text) {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const clean = text.replace(/[^A-Za-z0-9+/]/g, "");
    const bytes = new Uint8Array(Math.floor((clean.length * 3) / 4));
    let bits = 0, value = 0, at = 0;
    for (let i = 0; i < clean.length; i++) {
      value = (value << 6) | alphabet.indexOf(clean[i]);
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        bytes[at++] = (value >> bits) & 0xff;
      }
    }
    return bytes.subarray(0, at);
  }
  class Headers {
    #pairs;
    constructor(pairs) { this.#pairs = pairs.map(([k, v]) => [k.toLowerCase(), v]); }
    get(name) {
      const wanted = StringCtor(name).toLowerCase();
      const found = this.#pairs.filter(([k]) => k === wanted).map(([, v]) => v);
      return found.length ? found.join(", ") : null;
    }
    has(name) { return this.get(name) !== null; }
    entries() { return this.#pairs.values(); }
    [Symbol.iterator]() { return this.#pairs.values(); }
  }
  class Response {
    #body;
    #base64;
    constructor(answer) {
      this.status = answer.status;
      this.statusText = answer.statusText || "";
      this.ok = answer.status >= 200 && answer.status < 300;
      this.url = answer.url;
      this.headers = new Headers(answer.headers || []);
      this.#body = answer.body;
      this.#base64 = answer.bodyBase64;
    }
    async text() {
      if (this.#body !== undefined) return this.#body;
      throw new TypeErrorCtor(`the response from ${this.url} is not UTF-8 text; read it with arrayBuffer() or bytes()`);
    }
    async json() { return JSONParse(await this.text()); }
    async bytes() {
      if (this.#base64 !== undefined) return decodeBase64(this.#base64);
      const text = this.#body, out = [];
      for (let i = 0; i < text.length; i++) {
        let c = text.codePointAt(i);
        if (c > 0xffff) i++;
        if (c < 0x80) out.push(c);
        else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
        else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
        else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
      }
      return new Uint8Array(out);
    }
    async arrayBuffer() { return (await this.bytes()).buffer; }
  }
  async function fetch(url, init) {
    if (setup.netHosts.length === 0) {
      throw new ErrorCtor(`api.net.fetch: plugin ${PLUGIN} has no network permission; add "net": { "hosts": ["api.example.com"], "reason": "…" } to the permissions in its manifest.json`);
    }
    const options = init || {};
    const headers = [];
    if (options.headers) {
      const source = ArrayIsArray(options.headers) ? options.headers : typeof options.headers.entries === "function" ? [...options.headers.entries()] : Object.entries(options.headers);
      for (const [k, v] of source) headers.push([StringCtor(k), StringCtor(v)]);
    }
    if (options.body !== undefined && options.body !== null && typeof options.body !== "string") {
      throw new TypeErrorCtor("api.net.fetch: `body` must be a string (use JSON.stringify for JSON)");
    }
    const params = { url: StringCtor(url), method: StringCtor(options.method || "GET").toUpperCase(), headers };
    if (typeof options.body === "string") params.body = options.body;
    return new Response(await askHost("host/fetch", params, options.signal));
  }

  // ------------------------------------------------------------------ tools
  const registry = new MapCtor(); // name -> { definition, run }
  let serving = false; // true once `initialize` was answered: later changes are announced
  const toolsChanged = () => { if (serving) notify("host/tools.changed"); };

  function mustProvide(what) {
    if (!setup.mayProvideTools) {
      throw new ErrorCtor(`plugin ${PLUGIN} cannot ${what}: its manifest.json does not ask for the "tools.provide" permission; add "permissions": { "tools.provide": { "reason": "…" } }`);
    }
  }

  // A plain-JSON copy of the definition's fields; the host validates them and names
  // any field that is wrong.
  function definitionOf(def) {
    const fields = {
      name: def.name, description: def.description, inputSchema: def.inputSchema, outputSchema: def.outputSchema,
      title: def.title, annotations: def.annotations, requiresApproval: def.requiresApproval === true ? true : undefined,
    };
    try {
      return JSONParse(JSONStringify(fields));
    } catch (e) {
      throw new TypeErrorCtor(`tool ${def.name}: its definition is not plain JSON: ${e.message}`);
    }
  }

  function register(def) {
    mustProvide("register tools");
    if (def === null || typeof def !== "object") {
      throw new TypeErrorCtor("api.tools.register takes { name, description, inputSchema?, outputSchema?, title?, annotations?, run(input, ctx) }");
    }
    if (typeof def.name !== "string") throw new TypeErrorCtor("api.tools.register: `name` must be a string");
    if (typeof def.run !== "function") throw new TypeErrorCtor(`api.tools.register: tool ${def.name}: \`run\` must be a function (input, ctx) => result`);
    if (registry.has(def.name)) throw new ErrorCtor(`api.tools.register: plugin ${PLUGIN} already has a tool named ${def.name}; remove() it first`);
    const entry = { definition: definitionOf(def), run: (input, ctx) => call(def.run, def, input, ctx) };
    registry.set(def.name, entry);
    toolsChanged();
    return ObjectFreeze({
      remove() {
        if (registry.get(def.name) !== entry) return;
        registry.delete(def.name);
        toolsChanged();
      },
    });
  }

  const SIMPLE_NAME = /^[a-z][a-z0-9_]{0,63}$/;
  // The simpler form: globalThis.tools.<name> = { description, parameters, handler }.
  function collectSimpleTools(simple) {
    const problems = [];
    for (const name of ObjectKeys(simple)) {
      const where = `globalThis.tools.${name}`;
      const value = simple[name];
      if (!call(RegExpTest, SIMPLE_NAME, name)) { problems.push(`${where}: the name must match ^[a-z][a-z0-9_]{0,63}$ (lowercase letters, digits and _, starting with a letter)`); continue; }
      if (typeof value === "function") { problems.push(`${where}: a bare function is not a tool; assign { description, parameters, handler }`); continue; }
      if (value === null || typeof value !== "object") { problems.push(`${where}: must be { description, parameters, handler }`); continue; }
      if (typeof value.description !== "string" || value.description.trim() === "") { problems.push(`${where}: \`description\` is required: say what the tool does and when to use it`); continue; }
      if (typeof value.handler !== "function") { problems.push(`${where}: \`handler\` must be a function (input, ctx) => result`); continue; }
      if (value.parameters !== undefined && (value.parameters === null || typeof value.parameters !== "object" || ArrayIsArray(value.parameters))) { problems.push(`${where}: \`parameters\` must be a JSON Schema object`); continue; }
      if (registry.has(name)) { problems.push(`${where}: a tool named ${name} is already registered with api.tools.register`); continue; }
      try {
        mustProvide("register tools");
        const definition = definitionOf({ name, description: value.description, inputSchema: value.parameters || { type: "object", properties: {} } });
        registry.set(name, { definition, run: (input, ctx) => call(value.handler, value, input, ctx) });
      } catch (e) {
        problems.push(`${where}: ${e.message}`);
      }
    }
    return problems;
  }

  // What a tool's `run` returned, as an MCP CallToolResult.
  function toResult(value) {
    if (typeof value === "string") return { content: [{ type: "text", text: value }] };
    if (value === undefined) value = null;
    if (value !== null && typeof value === "object" && ArrayIsArray(value.content)) {
      for (const item of value.content) {
        const ok = item && ((item.type === "text" && typeof item.text === "string") || (item.type === "image" && typeof item.data === "string" && typeof item.mimeType === "string"));
        if (!ok) throw new TypeErrorCtor(`the tool returned a content item that is neither { type: "text", text } nor { type: "image", data, mimeType }: ${show(item)}`);
      }
      const result = { content: value.content };
      if (value.isError) result.isError = true;
      if (value.structuredContent !== undefined) result.structuredContent = value.structuredContent;
      return result;
    }
    const text = JSONStringify(value);
    if (text === undefined) throw new TypeErrorCtor(`the tool returned a ${typeof value}, which cannot be sent as JSON`);
    return { content: [{ type: "text", text }], structuredContent: value };
  }

  const failed = (text) => ({ content: [{ type: "text", text }], isError: true });
  const messageOf = (e) => (e instanceof ErrorCtor ? (e.name && e.name !== "Error" ? `${e.name}: ${e.message}` : e.message) : show(e));

  const calls = new MapCtor(); // JSON id -> AbortController
  async function callTool(id, params) {
    const key = JSONStringify(id);
    const controller = new AbortController();
    calls.set(key, controller);
    let result;
    try {
      const entry = registry.get(params.name);
      if (!entry) throw new ErrorCtor(`plugin ${PLUGIN} has no tool named ${params.name} (it may have been removed)`);
      const context = params.context || {};
      const ctx = ObjectFreeze({
        workspace: context.workspace, workspaceId: context.workspaceId, agentId: context.agentId,
        chatId: context.chatId, callId: context.callId, signal: controller.signal,
      });
      result = toResult(await entry.run(params.input === undefined ? {} : params.input, ctx));
    } catch (e) {
      result = failed(messageOf(e));
    }
    if (calls.get(key) !== controller) return; // given up by the host: it reads no answer
    calls.delete(key);
    let line;
    try {
      line = JSONStringify({ jsonrpc: "2.0", id, result });
    } catch (e) {
      line = JSONStringify({ jsonrpc: "2.0", id, result: failed(`the tool's result cannot be sent as JSON: ${e.message}`) });
    }
    opAnswer(key, line);
  }

  function cancelCall(id) {
    const key = JSONStringify(id);
    const controller = calls.get(key);
    if (!controller) return;
    calls.delete(key);
    opAnswer(key, "");
    controller.abort(abortError("the call was given up: the program ended, hit a limit, was cancelled, or the call timed out"));
  }

  // ------------------------------------------------------------------ api
  const api = ObjectFreeze({
    plugin: ObjectFreeze({ name: PLUGIN, version: setup.version }),
    tools: ObjectFreeze({ register }),
    net: ObjectFreeze({ fetch }),
  });

  // ----------------------------------------------------------------- driver
  function handle(line) {
    let message;
    try {
      message = JSONParse(line);
    } catch {
      consoleObject.error("the host sent a line that is not JSON; ignored");
      return;
    }
    if (message.method === undefined) {
      const waiter = hostRequests.get(message.id);
      if (!waiter) return;
      hostRequests.delete(message.id);
      if (message.error) waiter.reject(new ErrorCtor(message.error.message));
      else waiter.resolve(message.result);
      return;
    }
    switch (message.method) {
      case "initialize":
        if (activationError !== null) return refuse(message.id, -32000, activationError);
        serving = true;
        return answer(message.id, { name: PLUGIN, version: setup.version });
      case "tools/list":
        return answer(message.id, { tools: [...registry.values()].map((e) => e.definition) });
      case "tool/call":
        callTool(message.id, message.params || {});
        return;
      case "tool/cancel":
        return cancelCall(message.params && message.params.id);
      default:
        if (message.id !== undefined) refuse(message.id, -32601, `plugin ${PLUGIN} does not know the method ${message.method}`);
    }
  }

  let activationError = null;
  async function drive(namespace) {
    try {
      if (namespace.activate !== undefined) {
        if (typeof namespace.activate !== "function") throw new TypeErrorCtor("the main module's `activate` export must be a function (api) => void");
        await namespace.activate(api);
      }
      const problems = collectSimpleTools(simpleTools);
      ObjectFreeze(simpleTools);
      if (problems.length) throw new ErrorCtor(problems.join("; "));
    } catch (e) {
      activationError = `plugin ${PLUGIN} cannot load: ${messageOf(e)}`;
      consoleObject.error(activationError);
    }
    for (;;) handle(await opRecv());
  }
  opRegisterDriver(drive);

  // A promise nobody handles is logged, not fatal: it must not stop every call in flight.
  core.setUnhandledPromiseRejectionHandler((promise, reason) => {
    consoleObject.error("an unhandled promise rejection (ignored):", reason);
    return true;
  });

  // ---------------------------------------------------------- global scope
  const simpleTools = {};
  delete globalThis.Deno;
  delete globalThis.__bootstrap;
  for (const key of ["queueMicrotask", "performance", "gc", "WebAssembly"]) delete globalThis[key];
  const globals = { console: consoleObject, AbortController, AbortSignal, tools: simpleTools };
  for (const name of ObjectKeys(globals)) {
    ObjectDefineProperty(globalThis, name, { value: globals[name], writable: name !== "tools", enumerable: false, configurable: true });
  }
})();
