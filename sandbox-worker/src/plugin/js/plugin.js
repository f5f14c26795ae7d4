// The JavaScript side of a plugin runtime, evaluated once before the plugin's modules
// (a module of the bundle step, `build.rs`, after `common.js`, `plugin_schema.js`,
// `plugin_web.js` and `plugin_formats.js`; it sees only what its `import` lines name,
// and deno_core's `primordials`).
//
// It takes the plugin ops out of Deno.core and builds what the plugin's modules see: the
// ECMAScript language plus `PLUGIN_GLOBALS` (console, the web pieces of
// `plugin_web.js`, `process.env` with the plugin's settings, `crypto`'s random numbers,
// `globalThis.tools` and, for seed-003 scripts, `host`), and a CommonJS runtime for the
// packages that need it (`require`, reached by the ES module Rust writes in front of
// each CommonJS file). Then it registers the driver, which Rust calls with the layout's
// loaded modules: it runs the format's adapter (`activate(api)` here, the others in
// `plugin_formats.js`), and then handles what the Rust side delivers, one at a time:
// initialize, tools/list, a call, a cancellation, due timers, and the answers to the
// plugin's own host/fetch, host/approve and host/sample requests. JSON-RPC itself (ids, lines,
// checking a result's shape) is Rust's job (`plugin/ops.rs`), built on the typed
// messages of `protocol::plugin`.
//
// Everything here is built on primordials: after a plugin replaces
// `Array.prototype.push`, `String.prototype` methods or `globalThis.Object`, its
// console, its tool calls and the runtime's error messages still work.
import { common } from "../../js/common.js";
import { schemas } from "./plugin_schema.js";
import { web } from "./plugin_web.js";
import { formats } from "./plugin_formats.js";

const { describeThrown, keepOnlyGlobals, makeConsole, wrapAtomicsWait } = common;
const core = globalThis.Deno.core;
const evalContext = core.evalContext;
// The engine's async context (V8's continuation-preserved embedder data, which the
// QuickJS backend implements too): a value that follows the code that set it across
// `await`, promise reactions, `queueMicrotask` and (`plugin_web.js`) timers. It holds
// the running call whose code this is (`RunningCall`): what globals such as `host` and
// `api` act for.
const setAsyncContext = core.setAsyncContext;
const runningCallVariable = new core.AsyncVariable();
const {
  op_plugin_register_driver: opRegisterDriver,
  op_plugin_setup: opSetup,
  op_plugin_recv: opRecv,
  op_plugin_answer_initialize: opAnswerInitialize,
  op_plugin_answer_tools: opAnswerTools,
  op_plugin_answer_call: opAnswerCall,
  op_plugin_fetch: opFetch,
  op_plugin_approve: opApprove,
  op_plugin_sample: opSample,
  op_plugin_host_service: opHostService,
  op_plugin_cancel_request: opCancelRequest,
  op_plugin_tools_changed: opToolsChanged,
  op_plugin_progress: opProgress,
  op_plugin_log: opLog,
  op_plugin_require: opRequire,
  op_plugin_module_source: opModuleSource,
  op_plugin_random: opRandom,
  op_plugin_blocking: opBlocking,
} = core.ops;

// Time blocked in `Atomics.wait` counts towards the CPU step (see `step_clock.rs`).
wrapAtomicsWait(opBlocking);

const {
  ArrayBufferIsView,
  ArrayIsArray,
  ArrayPrototypeEvery,
  ArrayPrototypeFilter,
  ArrayPrototypeJoin,
  ArrayPrototypePush,
  Error: PluginError,
  JSONParse,
  JSONStringify,
  MapPrototypeDelete,
  MapPrototypeForEach,
  MapPrototypeGet,
  MapPrototypeGetSize,
  MapPrototypeHas,
  MapPrototypeSet,
  NumberIsInteger,
  NumberPrototypeToString,
  ObjectFreeze,
  ObjectKeys,
  Promise: PromiseCtor,
  ReflectApply,
  RegExpPrototypeTest,
  SafeMap,
  SafeRegExp,
  String: StringCtor,
  StringPrototypeIncludes,
  StringPrototypeIndexOf,
  StringPrototypeLastIndexOf,
  StringPrototypePadStart,
  StringPrototypeSlice,
  StringPrototypeStartsWith,
  StringPrototypeToLowerCase,
  StringPrototypeEndsWith,
  StringPrototypeTrim,
  SymbolFor,
  TypeError: PluginTypeError,
  Uint8Array: Uint8ArrayCtor,
} = primordials;

const setup = opSetup();
const PLUGIN = setup.plugin;
const FORMAT = setup.format;

// ------------------------------------------------------------------ console
const consoleObject = makeConsole((level, text) => opLog(level, text));

/** A thrown value as one line: `TypeError: message`, or the message of a plain Error. */
function messageOf(e) {
  const described = describeThrown(e, []);
  return described.name && described.name !== "Error" ? `${described.name}: ${described.message}` : described.message;
}

/** What touching a member codemode cannot offer does. */
function unoffered(name) {
  throw new PluginError(`codemode does not offer ${name}`);
}

// ----------------------------------------------------------------- settings
/** `value` (plain JSON) with every object and array in it frozen. */
function deepFreeze(value) {
  if (value !== null && typeof value === "object") {
    const keys = ObjectKeys(value);
    for (let i = 0; i < keys.length; i++) deepFreeze(value[keys[i]]);
    ObjectFreeze(value);
  }
  return value;
}

/** The plugin's settings (from its configuration entry): a fresh, deeply frozen copy each time. */
function settingsObject() {
  return deepFreeze(JSONParse(JSONStringify(setup.settings)));
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

const sendFetch = (params, signal) => awaitAnswer(opFetch(params), signal);

// -------------------------------------------------------------- model calls
// Seed 003's `host.llm`, `host.session.llm`, `host.decide` and seed 000's
// `api.models.prompt` ask the model of the MCP client whose call is running
// (`host/sample`, which the host turns into MCP sampling). They are globals (`host`,
// `api`), so the call is the one whose code is running (`callOfRunningCode`).

/** What touching a member that cannot exist under an MCP server does: says which, and why. */
function notApplicable(name, why) {
  throw new PluginError(`${name} is not available in codemode: ${why}`);
}

/**
 * The call whose code is running (the handler of a tool call, and what it started:
 * its awaits, promise reactions, microtasks and timers), for a global such as `host` or
 * `api` used as `member`. Throws when no call's code runs, or when that call has ended:
 * work a handler leaves behind is served as no other call's.
 */
function callOfRunningCode(member) {
  const call = runningCallVariable.get();
  if (call === undefined) {
    throw new PluginError(`${member} works only in the code of a tool call (its handler, and what the handler starts): it acts for the call whose code runs, and no call's code runs now`);
  }
  if (call.ended !== undefined) {
    throw new PluginError(`${member} was used by code of the call of ${PLUGIN}.${call.tool} after that call ${call.ended}: what a handler leaves running acts for its own call alone, and that call is over`);
  }
  return call;
}

/** A model request as the seed APIs write it, as `host/sample`'s parameters. */
function modelRequest(api, request) {
  const shape = `${api} takes a prompt (a string) or { prompt | messages, system?, maxTokens?, temperature?, stop?, model? }`;
  if (typeof request === "string") request = { prompt: request };
  if (request === null || typeof request !== "object") throw new PluginTypeError(shape);
  const messages = [];
  let system = request.system !== undefined ? request.system : request.systemPrompt;
  if (system !== undefined && typeof system !== "string") throw new PluginTypeError(`${api}: \`system\` must be a string`);
  if (request.messages !== undefined) {
    if (!ArrayIsArray(request.messages)) throw new PluginTypeError(`${api}: \`messages\` must be an array of { role: "user" | "assistant", content: string }`);
    for (let i = 0; i < request.messages.length; i++) {
      const m = request.messages[i];
      if (m === null || typeof m !== "object" || typeof m.content !== "string" || (m.role !== "user" && m.role !== "assistant" && m.role !== "system")) {
        throw new PluginTypeError(`${api}: messages[${i}] must be { role: "user" | "assistant", content: string }`);
      }
      // MCP sampling has no system messages: they join the system prompt.
      if (m.role === "system") system = system === undefined ? m.content : `${system}\n\n${m.content}`;
      else ArrayPrototypePush(messages, { role: m.role, content: m.content });
    }
  }
  if (request.prompt !== undefined) {
    if (typeof request.prompt !== "string") throw new PluginTypeError(`${api}: \`prompt\` must be a string`);
    ArrayPrototypePush(messages, { role: "user", content: request.prompt });
  }
  if (messages.length === 0) throw new PluginTypeError(shape);
  const maxTokens = request.maxTokens;
  if (maxTokens !== undefined && !(NumberIsInteger(maxTokens) && maxTokens > 0 && maxTokens <= 0xffffffff)) {
    throw new PluginTypeError(`${api}: \`maxTokens\` must be a positive whole number`);
  }
  if (request.temperature !== undefined && typeof request.temperature !== "number") throw new PluginTypeError(`${api}: \`temperature\` must be a number`);
  let stop = request.stop !== undefined ? request.stop : request.stopSequences;
  if (typeof stop === "string") stop = [stop];
  if (stop !== undefined && !(ArrayIsArray(stop) && ArrayPrototypeEvery(stop, (x) => typeof x === "string"))) {
    throw new PluginTypeError(`${api}: \`stop\` must be a string or an array of strings`);
  }
  if (request.model !== undefined && typeof request.model !== "string") throw new PluginTypeError(`${api}: \`model\` must be a string`);
  return {
    api,
    messages,
    systemPrompt: system,
    maxTokens,
    temperature: request.temperature,
    stopSequences: stop,
    modelHints: request.model === undefined ? undefined : [request.model],
  };
}

/** Asks the client's model: `{ text, model, stopReason }`. */
async function askModel(api, request) {
  const params = modelRequest(api, request);
  const call = callOfRunningCode(api);
  const answer = await awaitAnswer(opSample(call.ticket, JSONStringify(params)), call.controller.signal);
  return ObjectFreeze({ text: answer.text, model: answer.model, stopReason: answer.stopReason === null ? undefined : answer.stopReason });
}

/** Seed 000's `api.models.prompt({ ..., subagent? })`: a handle given shows the answer's text in it. */
async function promptModel(request) {
  const answer = await askModel("api.models.prompt", request);
  const sub = request !== null && typeof request === "object" ? request.subagent : undefined;
  if (sub !== null && typeof sub === "object" && typeof sub.text === "function") sub.text(answer.text);
  return answer;
}

/**
 * Seed 003's `host.decide(question, options)` (or `({ question, options })`): the model
 * chooses one of the options; the option it named is the answer.
 */
async function decide(question, options) {
  const api = "host.decide";
  if (question !== null && typeof question === "object" && options === undefined) {
    options = question.options;
    question = question.question;
  }
  if (typeof question !== "string" || !ArrayIsArray(options) || options.length < 2 || !ArrayPrototypeEvery(options, (o) => typeof o === "string")) {
    throw new PluginTypeError(`${api} takes (question, options) or { question, options }: a question and at least two options, each a string`);
  }
  const system = `Choose exactly one of these options and answer with that option alone, word for word: ${ArrayPrototypeJoin(options, " | ")}`;
  const answer = await askModel(api, { messages: [{ role: "user", content: question }], system, maxTokens: 256 });
  const said = StringPrototypeTrim(answer.text);
  const lower = StringPrototypeToLowerCase(said);
  for (let i = 0; i < options.length; i++) if (options[i] === said) return options[i];
  for (let i = 0; i < options.length; i++) if (StringPrototypeToLowerCase(options[i]) === lower) return options[i];
  const named = ArrayPrototypeFilter(options, (o) => StringPrototypeIncludes(lower, StringPrototypeToLowerCase(o)));
  if (named.length === 1) return named[0];
  throw new PluginError(`${api}: the model answered ${JSONStringify(said)}, which is not one of the options (${ArrayPrototypeJoin(options, ", ")})`);
}
const fetch = web.makeFetch("fetch", sendFetch);
const apiFetch = web.makeFetch("api.net.fetch", sendFetch);

// ------------------------------------------------------------------- base64
const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** A typed array's bytes as base64 (for `host/artifacts`). */
function bytesToBase64(view) {
  const bytes = new Uint8ArrayCtor(view.buffer, view.byteOffset, view.byteLength);
  const parts = [];
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    ArrayPrototypePush(parts, BASE64[(n >> 18) & 63] + BASE64[(n >> 12) & 63] + BASE64[(n >> 6) & 63] + BASE64[n & 63]);
  }
  if (i < bytes.length) {
    const two = i + 1 < bytes.length;
    const n = (bytes[i] << 16) | (two ? bytes[i + 1] << 8 : 0);
    ArrayPrototypePush(parts, BASE64[(n >> 18) & 63] + BASE64[(n >> 12) & 63] + (two ? BASE64[(n >> 6) & 63] : "=") + "=");
  }
  return ArrayPrototypeJoin(parts, "");
}

/** The bytes of the host's (padded, standard) base64. */
function base64ToBytes(text) {
  const pad = StringPrototypeEndsWith(text, "==") ? 2 : StringPrototypeEndsWith(text, "=") ? 1 : 0;
  const bytes = new Uint8ArrayCtor((text.length / 4) * 3 - pad);
  const value = (i) => { const v = StringPrototypeIndexOf(BASE64, text[i]); return v < 0 ? 0 : v; };
  let o = 0;
  for (let i = 0; i + 3 < text.length; i += 4) {
    const n = (value(i) << 18) | (value(i + 1) << 12) | (value(i + 2) << 6) | value(i + 3);
    bytes[o++] = (n >> 16) & 255;
    bytes[o++] = (n >> 8) & 255;
    bytes[o++] = n & 255;
  }
  return bytes;
}

// ------------------------------------------------------------------- crypto
function getRandomValues(array) {
  if (!ArrayBufferIsView(array)) throw new PluginTypeError("crypto.getRandomValues takes a typed array");
  const bytes = opRandom(array.byteLength);
  new Uint8ArrayCtor(array.buffer, array.byteOffset, array.byteLength).set(bytes);
  return array;
}

function randomUUID() {
  const b = opRandom(16);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  let hex = "";
  for (let i = 0; i < 16; i++) {
    hex += StringPrototypePadStart(NumberPrototypeToString(b[i], 16), 2, "0");
    if (i === 3 || i === 5 || i === 7 || i === 9) hex += "-";
  }
  return hex;
}

const cryptoObject = ObjectFreeze(formats.withUnoffered({ getRandomValues, randomUUID }, "crypto", ["subtle"], unoffered));

// -------------------------------------------------------------------- tools
/** name -> { definition, parseInput, parseOutput, shape, run } */
const registry = new SafeMap();
/** True once `initialize` was answered: later changes are announced. */
let serving = false;
const toolsChanged = () => { if (serving) opToolsChanged(); };
/** Things the plugin's format asks for that codemode does not honour, or that its layout holds and codemode leaves out, said at load. */
const notes = [];
for (let i = 0; i < setup.skipped.length; i++) ArrayPrototypePush(notes, setup.skipped[i]);

const TOOL_NAME = new SafeRegExp("^[A-Za-z0-9_-]{1,64}$");

function mustProvide(what) {
  if (!setup.mayProvideTools) {
    throw new PluginError(`plugin ${PLUGIN} cannot ${what}: its manifest.json does not ask for the "tools.provide" permission; add "permissions": { "tools.provide": { "reason": "…" } }`);
  }
}

/** A schema as the runtime needs it, or undefined when the tool has none. */
function schemaOf(value, where, io) {
  if (value === undefined || value === null) return undefined;
  return schemas.toolSchema(value, where, io);
}

/** A plain-JSON copy of an optional field, or a TypeError naming it. */
function plainJson(value, where) {
  if (value === undefined) return undefined;
  try {
    return JSONParse(JSONStringify(value));
  } catch (e) {
    throw new PluginTypeError(`${where} is not plain JSON: ${messageOf(e)}`);
  }
}

/**
 * Adds one tool. `spec`: `{ name, where, description, input, inputWhere, output?,
 * title?, annotations?, approval? ("always" | "once" | "never"), approvalReason?,
 * hidden?, scope?, owner?, meta?, shape?, run(input, call) }`, with schemas in any form
 * `plugin_schema.js` reads.
 */
function addTool(spec) {
  const name = spec.name;
  if (typeof name !== "string" || !RegExpPrototypeTest(TOOL_NAME, name)) {
    throw new PluginTypeError(`${spec.where}: the tool name ${JSONStringify(name)} must be 1 to 64 letters, digits, _ or -`);
  }
  if (MapPrototypeHas(registry, name)) throw new PluginError(`plugin ${PLUGIN} already has a tool named ${name}; remove() it first`);
  const input = schemaOf(spec.input, spec.inputWhere || `tool ${name}: inputSchema`, "input");
  const output = schemaOf(spec.output, spec.outputWhere || `tool ${name}: outputSchema`, "output");
  if (input && (input.jsonSchema === null || typeof input.jsonSchema !== "object" || input.jsonSchema.type !== "object")) {
    throw new PluginTypeError(`${spec.inputWhere || `tool ${name}: inputSchema`} must describe an object (the input is always an object of named fields), for example z.object({ ... }) or { type: "object", properties: { ... } }`);
  }
  const definition = {
    name,
    description: spec.description,
    inputSchema: input ? input.jsonSchema : { type: "object", properties: {} },
    outputSchema: output ? output.jsonSchema : undefined,
    title: plainJson(spec.title, `tool ${name}: title`),
    annotations: plainJson(spec.annotations, `tool ${name}: annotations`),
    requiresApproval: spec.approval === "always" || spec.approval === "once" ? spec.approval : undefined,
    approvalReason: spec.approvalReason,
    hidden: spec.hidden === true ? true : undefined,
    scope: typeof spec.scope === "string" ? spec.scope : undefined,
    owner: typeof spec.owner === "string" ? spec.owner : undefined,
    _meta: plainJson(spec.meta, `tool ${name}: metadata`),
  };
  const entry = {
    __proto__: null,
    definition: JSONParse(JSONStringify(definition)),
    parseInput: input && input.kind !== "json" ? input.parse : null,
    parseOutput: output && output.kind !== "json" ? output.parse : null,
    shape: spec.shape,
    run: spec.run,
  };
  MapPrototypeSet(registry, name, entry);
  toolsChanged();
  return entry;
}

/** The approval level a seed-000 definition's `requiresApproval` asks for. */
function approvalOf(value, name) {
  if (value === undefined || value === false || value === "never") return "never";
  if (value === true || value === "always") return "always";
  if (value === "once") return "once";
  throw new PluginTypeError(`tool ${name}: \`requiresApproval\` must be true, false, "always", "once" or "never"`);
}

/** `api.tools.register` (seed 000, and `convergence/effect`'s `Tools.register`). */
function register(def) {
  mustProvide("register tools");
  if (def === null || typeof def !== "object") {
    throw new PluginTypeError("api.tools.register takes { name, description, inputSchema?, outputSchema?, title?, annotations?, run(input, ctx) }");
  }
  if (typeof def.name !== "string") throw new PluginTypeError("api.tools.register: `name` must be a string");
  if (typeof def.run !== "function") throw new PluginTypeError(`api.tools.register: tool ${def.name}: \`run\` must be a function (input, ctx) => result`);
  if (typeof def.description !== "string" || StringPrototypeTrim(def.description) === "") {
    throw new PluginTypeError(`api.tools.register: tool ${def.name}: \`description\` is required: say what the tool does and when to use it`);
  }
  if (def.inputSchema !== undefined && def.input !== undefined) throw new PluginTypeError(`api.tools.register: tool ${def.name}: give \`inputSchema\` or \`input\`, not both`);
  if (def.outputSchema !== undefined && def.output !== undefined) throw new PluginTypeError(`api.tools.register: tool ${def.name}: give \`outputSchema\` or \`output\`, not both`);
  const run = def.run;
  const entry = addTool({
    name: def.name,
    where: `api.tools.register: tool ${def.name}`,
    description: def.description,
    input: def.inputSchema !== undefined ? def.inputSchema : def.input,
    inputWhere: `tool ${def.name}: ${def.inputSchema !== undefined ? "inputSchema" : "input"}`,
    output: def.outputSchema !== undefined ? def.outputSchema : def.output,
    outputWhere: `tool ${def.name}: ${def.outputSchema !== undefined ? "outputSchema" : "output"}`,
    title: def.title,
    annotations: def.annotations,
    approval: approvalOf(def.requiresApproval, def.name),
    scope: def.scope,
    run: (input, call) => ReflectApply(run, def, [input, manifestContext(call)]),
  });
  return ObjectFreeze({
    remove() {
      if (MapPrototypeGet(registry, def.name) !== entry) return;
      MapPrototypeDelete(registry, def.name);
      toolsChanged();
    },
  });
}

/** Seed 000's `ctx`. */
function manifestContext(call) {
  return ObjectFreeze({
    workspace: call.base.workspace,
    workspaceId: call.base.workspaceId,
    agentId: call.base.agentId,
    chatId: call.base.chatId,
    callId: call.base.callId,
    scope: undefined,
    signal: call.signal,
    subagent: call.subagent,
    /** Asks a person, through the host, to allow something: `{ approved, reason? }`. */
    approve: call.ask,
  });
}

/** Plain JSON of `value` for a progress line's details, or undefined when it has none. */
function detailsOf(value) {
  if (value === undefined) return undefined;
  try {
    const text = JSONStringify(value);
    return text === undefined ? undefined : JSONParse(text);
  } catch {
    return undefined;
  }
}

/**
 * Seed 000's `ctx.subagent`: each handle's rows (`text`, `reasoning`, `step`, `tool`
 * rows, `usage`, `notice`, `update`, `event`, `end`) go to the host as the call's
 * `host/progress` lines, which reach the agent's client as progress notifications when it
 * asked for them (`shown` is true exactly then). A subagent lives as long as its call:
 * when the handler returns or throws, each one still running ends with it (`completed`,
 * `failed`, or `stopped` when the call was given up), and everything a handle does
 * after its end is a no-op. The call's answer never waits for an `end()`.
 * `call`: `{ signal, shown, report(message, details?) }`.
 */
function makeSubagents(call) {
  /** The handles' end functions, for the ones still running when the call ends. */
  const running = [];
  const starter = ObjectFreeze({
    start: async (options) => {
      if (options === null || typeof options !== "object" || typeof options.title !== "string") {
        throw new PluginTypeError("ctx.subagent.start takes { title, name?, agent?, model?, effort?, prompt? }");
      }
      const title = options.title;
      let ended = false;
      let rows = 0;
      const say = (what, details) => { if (!ended) call.report(`subagent ${title}: ${what}`, detailsOf(details)); };
      const on = [];
      if (typeof options.agent === "string") ArrayPrototypePush(on, `agent ${options.agent}`);
      if (typeof options.model === "string") ArrayPrototypePush(on, `model ${options.model}`);
      call.report(`subagent ${title} started${on.length ? ` (${ArrayPrototypeJoin(on, ", ")})` : ""}`, undefined);
      const finish = (status, summary, how) => {
        if (ended) return;
        call.report(`subagent ${title} ended: ${status}${how}${summary === undefined ? "" : ` (${StringCtor(summary)})`}`, undefined);
        ended = true;
      };
      ArrayPrototypePush(running, (status) => finish(status, undefined, " with the call"));
      return ObjectFreeze({
        shown: call.shown,
        signal: call.signal,
        text: (delta) => say(`text ${StringCtor(delta)}`),
        reasoning: (delta) => say(`reasoning ${StringCtor(delta)}`),
        step: (stepTitle) => say(`step ${StringCtor(stepTitle)}`),
        usage: (usage) => say("usage", usage),
        notice: (message, level) => say(`notice${level === undefined ? "" : ` (${StringCtor(level)})`} ${StringCtor(message)}`),
        update: (fields) => say("update", fields),
        event: (kind) => say("event", kind),
        tool: (row) => {
          const id = `tool-${++rows}`;
          const label = row !== null && typeof row === "object" ? StringCtor(row.title ?? row.name ?? id) : id;
          say(`tool ${label}`, row);
          let done = false;
          const rowSay = (what, details) => { if (!done) say(`tool ${label} ${what}`, details); };
          return ObjectFreeze({
            id,
            update: (fields) => rowSay("update", fields),
            output: (text) => rowSay(`output ${StringCtor(text)}`),
            end: (status, content) => { rowSay(StringCtor(status ?? "completed"), content); done = true; },
          });
        },
        end: async (result) => {
          const status = result !== null && typeof result === "object" && result.status !== undefined ? StringCtor(result.status) : "completed";
          finish(status, result !== null && typeof result === "object" ? result.summary : undefined, "");
        },
      });
    },
  });
  /** Ends every subagent still running, with the call's `status`. */
  const endAll = (status) => {
    for (let i = 0; i < running.length; i++) running[i](status);
  };
  return { starter, endAll };
}

const SIMPLE_NAME = new SafeRegExp("^[a-z][a-z0-9_]{0,63}$");
/** Seed 003's form (also allowed beside `activate`): `globalThis.tools.<name> = { description, parameters, handler }`. */
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
      if (FORMAT === "manifest") mustProvide("register tools");
      const handler = value.handler;
      addTool({
        name,
        where,
        description: value.description,
        input: value.parameters === undefined ? { type: "object", properties: {} } : value.parameters,
        inputWhere: `${where}.parameters`,
        run: (input, call) => ReflectApply(handler, value, [input, manifestContext(call)]),
      });
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
  if (typeof value.handler !== "function") return "`handler` must be a function (input) => result";
  if (MapPrototypeHas(registry, name)) return `a tool named ${name} is already registered with api.tools.register`;
  return undefined;
}

/**
 * What a tool returned, as the JSON text of an MCP CallToolResult: a string is text
 * content, an object with a `content` array is a result already (any content kind MCP
 * defines; Rust checks its shape), an object is JSON text plus structuredContent (which
 * MCP says is an object), and any other value is JSON text.
 */
function resultText(value) {
  if (typeof value === "string") return JSONStringify({ content: [{ type: "text", text: value }] });
  if (value === undefined) value = null;
  const isObject = value !== null && typeof value === "object" && !ArrayIsArray(value);
  if (isObject && ArrayIsArray(value.content)) return JSONStringify(value);
  const text = JSONStringify(value);
  if (text === undefined) throw new PluginTypeError(`the tool returned a ${typeof value}, which cannot be sent as JSON`);
  const content = `{"content":[{"type":"text","text":${JSONStringify(text)}}]`;
  return isObject ? `${content},"structuredContent":${text}}` : `${content}}`;
}

const failedText = (message, meta) =>
  JSONStringify(meta === undefined
    ? { content: [{ type: "text", text: message }], isError: true }
    : { content: [{ type: "text", text: message }], isError: true, _meta: meta });

/**
 * A call's failure that still carries result `_meta` for the host (the change journal a
 * Podcode tool recorded before it threw): thrown by an adapter in place of `cause`.
 */
class FailureWithMeta {
  constructor(cause, meta) {
    this.cause = cause;
    this.meta = meta;
  }
}

/**
 * Calls still running, by ticket -> `RunningCall`: `{ ticket, tool, controller,
 * ended }`, where `ended` is undefined while the call runs and says how it
 * ended afterwards. The call's code carries its `RunningCall` as its async context.
 */
const calls = new SafeMap();

/** Serves `method` (`host/workspace`, ...) for the call whose code is running. */
function serveForRunningCode(member, method, params) {
  const call = callOfRunningCode(member);
  return awaitAnswer(opHostService(call.ticket, method, JSONStringify(params)), call.controller.signal);
}

/** Ends a call: its code, from now on, acts for nobody. */
function endCall(call, how) {
  call.ended = how;
  if (MapPrototypeGet(calls, call.ticket) === call) MapPrototypeDelete(calls, call.ticket);
}

/**
 * Starts the call `delivery` in its own async context: its handler, and everything the
 * handler starts, run as this call's code.
 */
function startCall(delivery) {
  const call = {
    __proto__: null,
    ticket: delivery.ticket,
    tool: delivery.name,
    controller: new web.AbortController(),
    ended: undefined,
  };
  MapPrototypeSet(calls, call.ticket, call);
  const previous = runningCallVariable.enter(call);
  try {
    callTool(call, delivery);
  } finally {
    setAsyncContext(previous);
  }
}

async function callTool(running, delivery) {
  const ticket = running.ticket;
  const controller = running.controller;
  let text;
  try {
    const entry = MapPrototypeGet(registry, delivery.name);
    if (!entry) throw new PluginError(`plugin ${PLUGIN} has no tool named ${delivery.name} (it may have been removed)`);
    let input = delivery.input === null ? {} : delivery.input;
    if (entry.parseInput) {
      const parsed = await entry.parseInput(input);
      if (!parsed.ok) throw new PluginError(`invalid input for ${PLUGIN}.${delivery.name}: ${parsed.message}`);
      input = parsed.value;
    }
    const context = delivery.context;
    /** Says how the call is going (`host/progress`); nothing once it has ended. */
    const report = (message, details) => {
      const plain = detailsOf(details);
      opProgress(ticket, StringCtor(message), plain === undefined ? null : JSONStringify(plain));
    };
    const shown = context.progressShown === true;
    const subagents = makeSubagents({ signal: controller.signal, shown, report });
    const call = ObjectFreeze({
      base: context,
      signal: controller.signal,
      shown,
      report,
      subagent: subagents.starter,
      hostContext: hostContextOf(context),
      idempotencyKey: `${PLUGIN}:${delivery.name}:${context.callId === undefined ? ticket : context.callId}`,
      service: (method, params) => awaitAnswer(opHostService(ticket, method, JSONStringify(params)), controller.signal),
      ask: (message, details) => {
        const detailsJson = details === undefined ? null : JSONStringify(details);
        return awaitAnswer(opApprove(ticket, StringCtor(message), detailsJson === undefined ? null : detailsJson), controller.signal);
      },
    });
    let value;
    try {
      value = await entry.run(input, call);
    } catch (e) {
      // A subagent the call leaves running ends with it.
      subagents.endAll(controller.signal.aborted ? "stopped" : "failed");
      throw e;
    }
    subagents.endAll(controller.signal.aborted ? "stopped" : "completed");
    if (entry.shape) value = entry.shape(value);
    if (entry.parseOutput && !(typeof value === "string" || (value !== null && typeof value === "object" && ArrayIsArray(value.content)))) {
      const parsed = await entry.parseOutput(value === undefined ? null : value);
      if (!parsed.ok) throw new PluginError(`tool ${delivery.name} returned a value that does not match its output schema: ${parsed.message}`);
      value = parsed.value;
    }
    text = resultText(value);
  } catch (e) {
    text = e instanceof FailureWithMeta ? failedText(messageOf(e.cause), e.meta) : failedText(messageOf(e));
  }
  if (running.ended !== undefined) return; // given up by the host: it reads no answer
  endCall(running, "answered");
  opAnswerCall(ticket, text);
}

/**
 * plico's `ctx.context`: what the host application passed its tools (an MCP client's
 * `_meta["codemode/context"]`), deeply frozen; undefined when it passed none.
 */
function hostContextOf(context) {
  return context.hostContext === undefined ? undefined : deepFreeze(context.hostContext);
}

function cancelCall(ticket) {
  const call = MapPrototypeGet(calls, ticket);
  if (!call) return;
  endCall(call, "was given up by the host");
  // Its abort listeners run as its code (and find it ended).
  const previous = runningCallVariable.enter(call);
  try {
    call.controller.abort(web.abortError("the call was given up: the program ended, hit a limit, was cancelled, or the call timed out"));
  } finally {
    setAsyncContext(previous);
  }
}

// ------------------------------------------------------------------ CommonJS
/** CommonJS modules by URL: `{ exports, loaded, ... }` (a module being loaded is there already, for cycles). */
const commonJsModules = new SafeMap();

/** The path of a `file:///plugin/...` URL, and its folder. */
function pathsOf(url) {
  const path = StringPrototypeSlice(url, "file://".length);
  return { __proto__: null, path, dir: StringPrototypeSlice(path, 0, StringPrototypeLastIndexOf(path, "/")) };
}

function requireFrom(referrer) {
  const require = (specifier) => {
    if (typeof specifier !== "string") throw new PluginTypeError("require takes a module name");
    const target = opRequire(specifier, referrer);
    switch (target.kind) {
      case "commonjs": return loadCommonJs(target.url);
      case "json": {
        const cached = MapPrototypeGet(commonJsModules, target.url);
        if (cached) return cached.exports;
        const module = { exports: JSONParse(opModuleSource(target.url)), loaded: true };
        MapPrototypeSet(commonJsModules, target.url, module);
        return module.exports;
      }
      default:
        throw new PluginError(`${pathsOf(referrer).path} requires ${JSONStringify(specifier)}, an ES module: CommonJS code reaches ES modules with import(), not require()`);
    }
  };
  require.resolve = (specifier) => pathsOf(opRequire(StringCtor(specifier), referrer).url).path;
  return require;
}

function loadCommonJs(url) {
  const cached = MapPrototypeGet(commonJsModules, url);
  if (cached) return cached.exports;
  const { path, dir } = pathsOf(url);
  const module = { exports: {}, id: path, filename: path, loaded: false, children: [], paths: [] };
  module.require = requireFrom(url);
  MapPrototypeSet(commonJsModules, url, module);
  let source = opModuleSource(url);
  // A hashbang line (`#!/usr/bin/env node`) is a comment to Node.
  if (StringPrototypeStartsWith(source, "#!")) source = `//${StringPrototypeSlice(source, 2)}`;
  const [factory, error] = evalContext(`(function (exports, require, module, __filename, __dirname) { ${source}\n})`, url);
  if (error) {
    MapPrototypeDelete(commonJsModules, url);
    throw error.thrown;
  }
  try {
    ReflectApply(factory, module.exports, [module.exports, module.require, module, path, dir]);
  } catch (e) {
    MapPrototypeDelete(commonJsModules, url);
    throw e;
  }
  module.loaded = true;
  return module.exports;
}

// ---------------------------------------------------------------------- api
/** Seed 000's `api.host` members that cannot exist under an MCP server, and why. */
const API_HOST_NOT_APPLICABLE = [
  ["kernel", "codemode has no app commands for it to run (an MCP server offers the agent tools, not the commands of an app); a tool that should run something does the work itself"],
];
const api = ObjectFreeze(formats.withUnoffered({
  plugin: ObjectFreeze({ name: PLUGIN, version: setup.version }),
  tools: ObjectFreeze({ register }),
  net: ObjectFreeze({ fetch: apiFetch }),
  get settings() { return settingsObject(); },
  models: ObjectFreeze({ prompt: promptModel }),
  host: ObjectFreeze(formats.withNotApplicable({}, "api.host", API_HOST_NOT_APPLICABLE, notApplicable)),
}, "api", [], unoffered));

/** What `plugin_formats.js`'s adapters get. */
const kit = ObjectFreeze({
  plugin: PLUGIN,
  register: (spec) => { addTool(spec); },
  note: (text) => { ArrayPrototypePush(notes, text); },
  refuse: (text) => { throw new PluginError(text); },
  failWithMeta: (cause, meta) => { throw new FailureWithMeta(cause, meta); },
  unoffered,
  notApplicable,
  askModel,
  decide,
  settingsObject,
  fetch,
  workspace: (op, params) => serveForRunningCode(`host.workspace.${op}`, "host/workspace", { ...params, op }),
  bytesToBase64,
  base64ToBytes,
  isBytes: ArrayBufferIsView,
  console: consoleObject,
  crypto: cryptoObject,
});

// ------------------------------------------------------------------- driver
let activationError = null;

function handle(delivery) {
  switch (delivery.kind) {
    case "initialize":
      if (activationError === null) serving = true;
      return opAnswerInitialize(delivery.ticket, activationError, notes);
    case "toolsList": {
      const definitions = [];
      MapPrototypeForEach(registry, (entry) => ArrayPrototypePush(definitions, entry.definition));
      return opAnswerTools(delivery.ticket, JSONStringify(definitions));
    }
    case "call":
      return startCall(delivery);
    case "cancel":
      return cancelCall(delivery.ticket);
    case "timers":
      return web.fireTimers();
    case "fetched":
      return settleOwn(delivery.request, (waiter) => waiter.resolve(delivery.response));
    case "approved":
      return settleOwn(delivery.request, (waiter) => waiter.resolve(ObjectFreeze({ approved: delivery.approved, reason: delivery.reason === null ? undefined : delivery.reason })));
    case "sampled":
      return settleOwn(delivery.request, (waiter) => waiter.resolve(delivery.answer));
    case "served":
      return settleOwn(delivery.request, (waiter) => waiter.resolve(delivery.result));
    case "refused":
      return settleOwn(delivery.request, (waiter) => waiter.reject(new PluginError(delivery.message)));
  }
}

/** Seed 000: the main module's `activate(api)` (or a default-exported function), and `globalThis.tools`. */
async function activateManifest(entries) {
  if (entries.length === 0) return;
  const namespace = entries[0].namespace;
  let activate = namespace.activate;
  if (activate === undefined && typeof namespace.default === "function") activate = namespace.default;
  if (activate !== undefined) {
    if (typeof activate !== "function") throw new PluginTypeError("the main module's `activate` export must be a function (api) => void");
    await activate(api);
  }
  const problems = collectSimpleTools(simpleTools);
  if (problems.length) throw new PluginError(ArrayPrototypeJoin(problems, "; "));
  if (activate === undefined && MapPrototypeGetSize(registry) === 0) {
    const exported = ObjectKeys(namespace);
    throw new PluginError(`the main module ${entries[0].module} exports no activate(api) function${exported.length ? ` (it exports ${ArrayPrototypeJoin(exported, ", ")})` : ""} and assigns no globalThis.tools, so the plugin offers no tools; export function activate(api) { api.tools.register({ ... }) }`);
  }
  if (MapPrototypeGetSize(registry) === 0) ArrayPrototypePush(notes, "activate(api) registered no tools (yet)");
}

/** Runs the format's adapter over the loaded modules: `[{ module, tool, namespace }]`. */
async function load(entries) {
  switch (FORMAT) {
    case "manifest": return activateManifest(entries);
    case "zhin": return formats.zhin(entries, kit);
    case "plico": return formats.plico(entries, kit);
    case "podcode": return formats.podcode(entries, kit);
    case "globals": {
      const problems = collectSimpleTools(simpleTools);
      if (problems.length) throw new PluginError(ArrayPrototypeJoin(problems, "; "));
      if (MapPrototypeGetSize(registry) === 0) throw new PluginError(`${entries[0].module} assigns no tools: assign globalThis.tools.<name> = { description, parameters, handler }`);
      return;
    }
  }
  throw new PluginError(`this runtime does not know the plugin format ${FORMAT}`);
}

async function drive(entries) {
  try {
    await load(entries);
    if (MapPrototypeGetSize(registry) === 0 && FORMAT !== "manifest") throw new PluginError("the plugin offers no tools");
  } catch (e) {
    activationError = `plugin ${PLUGIN} cannot load: ${messageOf(e)}`;
    consoleObject.error(activationError);
  }
  ObjectFreeze(simpleTools);
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
const processObject = ObjectFreeze({ env: settingsObject() });
/**
 * What a plugin's modules see besides the ECMAScript language: the one place to add a
 * global a plugin format needs. `[name, value, writable]`.
 */
const PLUGIN_GLOBALS = [
  ["console", consoleObject, true],
  ["AbortController", web.AbortController, true],
  ["AbortSignal", web.AbortSignal, true],
  ["setTimeout", web.timerGlobals.setTimeout, true],
  ["clearTimeout", web.timerGlobals.clearTimeout, true],
  ["setInterval", web.timerGlobals.setInterval, true],
  ["clearInterval", web.timerGlobals.clearInterval, true],
  ["queueMicrotask", web.timerGlobals.queueMicrotask, true],
  ["TextEncoder", web.TextEncoder, true],
  ["TextDecoder", web.TextDecoder, true],
  ["URL", web.URL, true],
  ["performance", web.performance, true],
  ["URLSearchParams", web.URLSearchParams, true],
  ["Blob", web.Blob, true],
  ["File", web.File, true],
  ["FormData", web.FormData, true],
  ["Headers", web.Headers, true],
  ["Request", web.Request, true],
  ["Response", web.Response, true],
  ["fetch", fetch, true],
  ["crypto", cryptoObject, true],
  ["process", processObject, true],
  ["tools", simpleTools, false],
  // The CommonJS runtime, for the ES module Rust writes in front of each CommonJS file.
  [SymbolFor("codemode.require"), loadCommonJs, false],
];
if (FORMAT === "globals") ArrayPrototypePush(PLUGIN_GLOBALS, ["host", formats.makeHost(kit), false]);
keepOnlyGlobals(PLUGIN_GLOBALS);
