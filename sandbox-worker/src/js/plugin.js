// The JavaScript side of a plugin runtime, evaluated once before the plugin's modules
// (after `common.js`, in the same function of `primordials`).
//
// It takes the plugin ops out of Deno.core, builds `console`, `AbortController`,
// `AbortSignal`, the `api` object and the `globalThis.tools` registry, keeps only the
// globals of `PLUGIN_GLOBALS` (the ECMAScript language plus those), and registers the
// driver that Rust calls with the main module's namespace. The driver calls
// `activate(api)`, collects `globalThis.tools.<name>` registrations, then handles what
// the Rust side delivers, one at a time: initialize, tools/list, a call, a
// cancellation, and the answers to the plugin's own host/fetch and host/approve
// requests. JSON-RPC itself (ids, lines, checking a result's shape) is Rust's job
// (`plugin/ops.rs`), built on the typed messages of `protocol::plugin`.
//
// Everything here is built on primordials: after a plugin replaces
// `Array.prototype.push`, `String.prototype` methods or `globalThis.Object`, its
// console, its tool calls and the runtime's error messages still work.
const { describeThrown, keepOnlyGlobals, makeConsole } = common;
const core = globalThis.Deno.core;
const {
  op_plugin_register_driver: opRegisterDriver,
  op_plugin_setup: opSetup,
  op_plugin_recv: opRecv,
  op_plugin_answer_initialize: opAnswerInitialize,
  op_plugin_answer_tools: opAnswerTools,
  op_plugin_answer_call: opAnswerCall,
  op_plugin_fetch: opFetch,
  op_plugin_approve: opApprove,
  op_plugin_cancel_request: opCancelRequest,
  op_plugin_tools_changed: opToolsChanged,
  op_plugin_log: opLog,
} = core.ops;
const encodeText = core.encode;
const decodeText = core.decode;

const {
  ArrayIsArray,
  ArrayPrototypeJoin,
  ArrayPrototypePush,
  Error: PluginError,
  JSONParse,
  JSONStringify,
  MapPrototypeDelete,
  MapPrototypeForEach,
  MapPrototypeGet,
  MapPrototypeHas,
  MapPrototypeSet,
  ObjectEntries,
  ObjectFreeze,
  ObjectKeys,
  Promise: PromiseCtor,
  PromiseReject,
  ReflectApply,
  RegExpPrototypeTest,
  SafeArrayIterator,
  SafeMap,
  SafeRegExp,
  SafeWeakMap,
  String: StringCtor,
  StringPrototypeToLowerCase,
  StringPrototypeToUpperCase,
  StringPrototypeTrim,
  TypeError: PluginTypeError,
  WeakMapPrototypeGet,
  WeakMapPrototypeSet,
} = primordials;

const setup = opSetup();
const PLUGIN = setup.plugin;

// ------------------------------------------------------------------ console
const consoleObject = makeConsole((level, text) => opLog(level, text));

/** A thrown value as one line: `TypeError: message`, or the message of a plain Error. */
function messageOf(e) {
  const described = describeThrown(e, 0);
  return described.name && described.name !== "Error" ? `${described.name}: ${described.message}` : described.message;
}

// --------------------------------------------------------- abort signalling
function abortError(reason) {
  const e = new PluginError(typeof reason === "string" ? reason : "the operation was aborted");
  e.name = "AbortError";
  return e;
}

const signalState = new SafeWeakMap();
class AbortSignal {
  constructor(key) {
    if (key !== signalState) throw new PluginTypeError("AbortSignal is made by an AbortController");
    WeakMapPrototypeSet(signalState, this, { __proto__: null, aborted: false, reason: undefined, listeners: [] });
    this.onabort = null;
  }
  get aborted() { return WeakMapPrototypeGet(signalState, this).aborted; }
  get reason() { return WeakMapPrototypeGet(signalState, this).reason; }
  throwIfAborted() { if (this.aborted) throw this.reason; }
  addEventListener(type, listener, options) {
    if (type !== "abort" || typeof listener !== "function") return;
    ArrayPrototypePush(WeakMapPrototypeGet(signalState, this).listeners, { __proto__: null, listener, once: !!(options && options.once) });
  }
  removeEventListener(type, listener) {
    const state = WeakMapPrototypeGet(signalState, this);
    const kept = [];
    for (let i = 0; i < state.listeners.length; i++) {
      if (state.listeners[i].listener !== listener) ArrayPrototypePush(kept, state.listeners[i]);
    }
    state.listeners = kept;
  }
  static abort(reason) {
    const controller = new AbortController();
    controller.abort(reason);
    return controller.signal;
  }
}

class AbortController {
  #signal = new AbortSignal(signalState);
  get signal() { return this.#signal; }
  abort(reason) {
    const signal = this.#signal;
    const state = WeakMapPrototypeGet(signalState, signal);
    if (state.aborted) return;
    state.aborted = true;
    state.reason = reason === undefined ? abortError() : reason;
    const event = { type: "abort", target: signal };
    const listeners = state.listeners;
    state.listeners = [];
    const run = (fn) => {
      if (typeof fn !== "function") return;
      try {
        ReflectApply(fn, signal, [event]);
      } catch (e) {
        consoleObject.error("an abort listener threw:", e);
      }
    };
    run(signal.onabort);
    for (let i = 0; i < listeners.length; i++) run(listeners[i].listener);
  }
}

// ------------------------------------------------- the plugin's own requests
/** Requests this plugin made to the host (host/fetch, host/approve), by number. */
const ownRequests = new SafeMap();

/** Waits for the answer to own request `number`; `signal` gives it up. */
function awaitAnswer(number, signal) {
  return new PromiseCtor((resolve, reject) => {
    MapPrototypeSet(ownRequests, number, { __proto__: null, resolve, reject });
    if (signal) {
      signal.addEventListener("abort", () => {
        if (!MapPrototypeDelete(ownRequests, number)) return;
        opCancelRequest(number);
        reject(signal.reason);
      }, { once: true });
    }
  });
}

function settleOwn(number, settle) {
  const waiter = MapPrototypeGet(ownRequests, number);
  if (!waiter) return;
  MapPrototypeDelete(ownRequests, number);
  settle(waiter);
}

// -------------------------------------------------------------------- fetch
class Headers {
  #pairs;
  constructor(pairs) {
    const lowered = [];
    for (let i = 0; i < pairs.length; i++) ArrayPrototypePush(lowered, [StringPrototypeToLowerCase(pairs[i][0]), pairs[i][1]]);
    this.#pairs = lowered;
  }
  get(name) {
    const wanted = StringPrototypeToLowerCase(StringCtor(name));
    const found = [];
    for (let i = 0; i < this.#pairs.length; i++) {
      if (this.#pairs[i][0] === wanted) ArrayPrototypePush(found, this.#pairs[i][1]);
    }
    return found.length ? ArrayPrototypeJoin(found, ", ") : null;
  }
  has(name) { return this.get(name) !== null; }
  entries() { return new SafeArrayIterator(this.#pairs); }
  [primordials.SymbolIterator]() { return new SafeArrayIterator(this.#pairs); }
}

class Response {
  #text;
  #bytes;
  constructor(answer) {
    this.status = answer.status;
    this.statusText = answer.statusText;
    this.ok = answer.status >= 200 && answer.status < 300;
    this.url = answer.url;
    this.headers = new Headers(answer.headers);
    this.#text = answer.text;
    this.#bytes = answer.bytes;
  }
  /** The body as text (a body that is not UTF-8 is decoded with replacement characters, as browsers do). */
  async text() { return this.#text !== null ? this.#text : decodeText(this.#bytes); }
  async json() { return JSONParse(await this.text()); }
  async bytes() { return this.#bytes !== null ? this.#bytes : encodeText(this.#text); }
  async arrayBuffer() { return (await this.bytes()).buffer; }
}

/** The `headers` of a fetch's options as pairs: an array of pairs, a Headers, or an object. */
function headerPairs(headers) {
  const pairs = [];
  if (!headers) return pairs;
  let source;
  if (ArrayIsArray(headers)) source = headers;
  else if (headers instanceof Headers || typeof headers.entries === "function") {
    source = [];
    for (const pair of headers.entries()) ArrayPrototypePush(source, pair);
  } else source = ObjectEntries(headers);
  for (let i = 0; i < source.length; i++) ArrayPrototypePush(pairs, [StringCtor(source[i][0]), StringCtor(source[i][1])]);
  return pairs;
}

async function fetch(url, init) {
  if (setup.netHosts.length === 0) {
    throw new PluginError(`api.net.fetch: plugin ${PLUGIN} has no network permission; add "net": { "hosts": ["api.example.com"], "reason": "…" } to the permissions in its manifest.json`);
  }
  const options = init || {};
  if (options.body !== undefined && options.body !== null && typeof options.body !== "string") {
    throw new PluginTypeError("api.net.fetch: `body` must be a string (use JSON.stringify for JSON)");
  }
  const signal = options.signal;
  if (signal && signal.aborted) return PromiseReject(signal.reason);
  const params = {
    url: StringCtor(url),
    method: StringPrototypeToUpperCase(StringCtor(options.method || "GET")),
    headers: headerPairs(options.headers),
    body: typeof options.body === "string" ? options.body : null,
  };
  return new Response(await awaitAnswer(opFetch(params), signal));
}

// -------------------------------------------------------------------- tools
/** name -> { definition, run } */
const registry = new SafeMap();
/** True once `initialize` was answered: later changes are announced. */
let serving = false;
const toolsChanged = () => { if (serving) opToolsChanged(); };

function mustProvide(what) {
  if (!setup.mayProvideTools) {
    throw new PluginError(`plugin ${PLUGIN} cannot ${what}: its manifest.json does not ask for the "tools.provide" permission; add "permissions": { "tools.provide": { "reason": "…" } }`);
  }
}

/** A plain-JSON copy of the definition's fields; the host checks them and names any field that is wrong. */
function definitionOf(def) {
  const fields = {
    name: def.name,
    description: def.description,
    inputSchema: def.inputSchema,
    outputSchema: def.outputSchema,
    title: def.title,
    annotations: def.annotations,
    requiresApproval: def.requiresApproval === true ? true : undefined,
  };
  try {
    return JSONParse(JSONStringify(fields));
  } catch (e) {
    throw new PluginTypeError(`tool ${def.name}: its definition is not plain JSON: ${messageOf(e)}`);
  }
}

function register(def) {
  mustProvide("register tools");
  if (def === null || typeof def !== "object") {
    throw new PluginTypeError("api.tools.register takes { name, description, inputSchema?, outputSchema?, title?, annotations?, run(input, ctx) }");
  }
  if (typeof def.name !== "string") throw new PluginTypeError("api.tools.register: `name` must be a string");
  if (typeof def.run !== "function") throw new PluginTypeError(`api.tools.register: tool ${def.name}: \`run\` must be a function (input, ctx) => result`);
  if (MapPrototypeHas(registry, def.name)) throw new PluginError(`api.tools.register: plugin ${PLUGIN} already has a tool named ${def.name}; remove() it first`);
  const run = def.run;
  const entry = { __proto__: null, definition: definitionOf(def), run: (input, ctx) => ReflectApply(run, def, [input, ctx]) };
  MapPrototypeSet(registry, def.name, entry);
  toolsChanged();
  return ObjectFreeze({
    remove() {
      if (MapPrototypeGet(registry, def.name) !== entry) return;
      MapPrototypeDelete(registry, def.name);
      toolsChanged();
    },
  });
}

const SIMPLE_NAME = new SafeRegExp("^[a-z][a-z0-9_]{0,63}$");
/** The simpler form: `globalThis.tools.<name> = { description, parameters, handler }`. */
function collectSimpleTools(simple) {
  const problems = [];
  const names = ObjectKeys(simple);
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    const where = `globalThis.tools.${name}`;
    const value = simple[name];
    const problem = simpleToolProblem(name, value);
    if (problem) {
      ArrayPrototypePush(problems, `${where}: ${problem}`);
      continue;
    }
    try {
      mustProvide("register tools");
      const definition = definitionOf({ name, description: value.description, inputSchema: value.parameters || { type: "object", properties: {} } });
      const handler = value.handler;
      MapPrototypeSet(registry, name, { __proto__: null, definition, run: (input, ctx) => ReflectApply(handler, value, [input, ctx]) });
    } catch (e) {
      ArrayPrototypePush(problems, `${where}: ${messageOf(e)}`);
    }
  }
  return problems;
}

function simpleToolProblem(name, value) {
  if (!RegExpPrototypeTest(SIMPLE_NAME, name)) return "the name must match ^[a-z][a-z0-9_]{0,63}$ (lowercase letters, digits and _, starting with a letter)";
  if (typeof value === "function") return "a bare function is not a tool; assign { description, parameters, handler }";
  if (value === null || typeof value !== "object") return "must be { description, parameters, handler }";
  if (typeof value.description !== "string" || StringPrototypeTrim(value.description) === "") return "`description` is required: say what the tool does and when to use it";
  if (typeof value.handler !== "function") return "`handler` must be a function (input, ctx) => result";
  if (value.parameters !== undefined && (value.parameters === null || typeof value.parameters !== "object" || ArrayIsArray(value.parameters))) return "`parameters` must be a JSON Schema object";
  if (MapPrototypeHas(registry, name)) return `a tool named ${name} is already registered with api.tools.register`;
  return undefined;
}

/**
 * What a tool's `run` returned, as the JSON text of an MCP CallToolResult: a string is
 * text content, an object with a `content` array is a result already (any content kind
 * MCP defines; Rust checks its shape), anything else is JSON text plus
 * structuredContent.
 */
function resultText(value) {
  if (typeof value === "string") return JSONStringify({ content: [{ type: "text", text: value }] });
  if (value === undefined) value = null;
  if (value !== null && typeof value === "object" && ArrayIsArray(value.content)) return JSONStringify(value);
  const text = JSONStringify(value);
  if (text === undefined) throw new PluginTypeError(`the tool returned a ${typeof value}, which cannot be sent as JSON`);
  return `{"content":[{"type":"text","text":${JSONStringify(text)}}],"structuredContent":${text}}`;
}

const failedText = (message) => JSONStringify({ content: [{ type: "text", text: message }], isError: true });

/** Calls still running, by ticket -> AbortController. */
const calls = new SafeMap();

async function callTool(delivery) {
  const ticket = delivery.ticket;
  const controller = new AbortController();
  MapPrototypeSet(calls, ticket, controller);
  let text;
  try {
    const entry = MapPrototypeGet(registry, delivery.name);
    if (!entry) throw new PluginError(`plugin ${PLUGIN} has no tool named ${delivery.name} (it may have been removed)`);
    const context = delivery.context;
    const ctx = ObjectFreeze({
      workspace: context.workspace,
      workspaceId: context.workspaceId,
      agentId: context.agentId,
      chatId: context.chatId,
      callId: context.callId,
      signal: controller.signal,
      /** Asks a person, through the host, to allow something: `{ approved, reason? }`. */
      approve: (message, details) => {
        const detailsJson = details === undefined ? null : JSONStringify(details);
        return awaitAnswer(opApprove(ticket, StringCtor(message), detailsJson === undefined ? null : detailsJson), controller.signal);
      },
    });
    text = resultText(await entry.run(delivery.input === null ? {} : delivery.input, ctx));
  } catch (e) {
    text = failedText(messageOf(e));
  }
  if (MapPrototypeGet(calls, ticket) !== controller) return; // given up by the host: it reads no answer
  MapPrototypeDelete(calls, ticket);
  opAnswerCall(ticket, text);
}

function cancelCall(ticket) {
  const controller = MapPrototypeGet(calls, ticket);
  if (!controller) return;
  MapPrototypeDelete(calls, ticket);
  controller.abort(abortError("the call was given up: the program ended, hit a limit, was cancelled, or the call timed out"));
}

// ---------------------------------------------------------------------- api
const api = ObjectFreeze({
  plugin: ObjectFreeze({ name: PLUGIN, version: setup.version }),
  tools: ObjectFreeze({ register }),
  net: ObjectFreeze({ fetch }),
});

// ------------------------------------------------------------------- driver
function handle(delivery) {
  switch (delivery.kind) {
    case "initialize":
      if (activationError === null) serving = true;
      return opAnswerInitialize(delivery.ticket, activationError);
    case "toolsList": {
      const definitions = [];
      MapPrototypeForEach(registry, (entry) => ArrayPrototypePush(definitions, entry.definition));
      return opAnswerTools(delivery.ticket, JSONStringify(definitions));
    }
    case "call":
      callTool(delivery);
      return;
    case "cancel":
      return cancelCall(delivery.ticket);
    case "fetched":
      return settleOwn(delivery.request, (waiter) => waiter.resolve(delivery.response));
    case "approved":
      return settleOwn(delivery.request, (waiter) => waiter.resolve(ObjectFreeze({ approved: delivery.approved, reason: delivery.reason === null ? undefined : delivery.reason })));
    case "refused":
      return settleOwn(delivery.request, (waiter) => waiter.reject(new PluginError(delivery.message)));
  }
}

let activationError = null;
async function drive(namespace) {
  try {
    if (namespace.activate !== undefined) {
      if (typeof namespace.activate !== "function") throw new PluginTypeError("the main module's `activate` export must be a function (api) => void");
      await namespace.activate(api);
    }
    const problems = collectSimpleTools(simpleTools);
    ObjectFreeze(simpleTools);
    if (problems.length) throw new PluginError(ArrayPrototypeJoin(problems, "; "));
  } catch (e) {
    activationError = `plugin ${PLUGIN} cannot load: ${messageOf(e)}`;
    consoleObject.error(activationError);
  }
  for (;;) handle(await opRecv());
}
opRegisterDriver(drive);

// A promise nobody handles is logged, not fatal: it must not stop every call in flight.
core.setUnhandledPromiseRejectionHandler((promise, reason) => {
  consoleObject.error(`an unhandled promise rejection (ignored): ${messageOf(reason)}`);
  return true;
});

// ------------------------------------------------------------- global scope
const simpleTools = {};
/**
 * What a plugin's modules see besides the ECMAScript language: the one place to add a
 * global a plugin format needs. `[name, value, writable]`.
 */
const PLUGIN_GLOBALS = [
  ["console", consoleObject, true],
  ["AbortController", AbortController, true],
  ["AbortSignal", AbortSignal, true],
  ["tools", simpleTools, false],
];
keepOnlyGlobals(PLUGIN_GLOBALS);
