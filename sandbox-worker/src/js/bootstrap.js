// The program runtime's JavaScript side, evaluated once per process before any user
// code (a module of the bundle step, `build.rs`, after `common.js`; it sees only what
// its `import` line names, and deno_core's `primordials`).
//
// It takes the codemode ops out of Deno.core, builds `console`, registers the driver
// that runs one program, and strips the global scope down to the ECMAScript language,
// `tools` (added per program) and `console`. If anything else is left on the global
// object, it throws: the worker must not run user code then.
//
// Whatever a program throws, rejects or leaves behind ends in an outcome the driver
// reports itself (`op_codemode_finish`): no exception of the program reaches
// deno_core's error conversion, which cannot describe every value.
import { common } from "./common.js";

const { defineValue, describeThrown, isEngineInternal, keepOnlyGlobals, makeConsole, setProgramInsertions, wrapAtomicsWait } = common;
const core = globalThis.Deno.core;
const {
  op_codemode_tool_call: opToolCall,
  op_codemode_console: opConsole,
  op_codemode_register_driver: opRegisterDriver,
  op_codemode_program: opProgram,
  op_codemode_finish: opFinish,
  op_codemode_out_of_memory: opOutOfMemory,
  op_codemode_register_describer: opRegisterDescriber,
  op_codemode_blocking: opBlocking,
  op_codemode_register_entropy: opRegisterEntropy,
  op_codemode_calls_in_flight: opCallsInFlight,
} = core.ops;

const {
  ArrayIsArray,
  ArrayPrototypePush,
  ArrayPrototypeJoin,
  ArrayPrototypeSort,
  Error: ProgramError,
  JSONParse,
  JSONStringify,
  MathImul,
  MathMin,
  ObjectCreate,
  ObjectFreeze,
  ObjectPrototype,
  PromisePrototypeThen,
  PromiseReject,
  PromiseResolve,
  Proxy: ProxyCtor,
  ReflectGet,
  ReflectHas,
  ReflectApply,
  ReflectConstruct,
  SafeSet,
  SetPrototypeHas,
  StringPrototypeCharCodeAt,
  StringPrototypeToLowerCase,
  StringPrototypeSlice,
  StringPrototypeIndexOf,
  TypeError: ProgramTypeError,
} = primordials;

/** Text the runtime inserted into the program, `[line, at, by, ...]`; set per program. */
let insertions = [];

// ------------------------------------------------------------------ console
const consoleObject = makeConsole((level, text) => opConsole(level, text));

// ------------------------------------------------- SharedArrayBuffer memory
// QuickJS allocates SharedArrayBuffer memory outside its heap accounting; when the OS
// limit refuses it, the engine throws a value that is not an ECMAScript value. The
// constructor and `slice` are wrapped so that such a failure ends the program as the
// memory limit before the program can see the value.
const OriginalSharedArrayBuffer = globalThis.SharedArrayBuffer;
if (typeof OriginalSharedArrayBuffer === "function") {
  const SharedArrayBufferPrototype = OriginalSharedArrayBuffer.prototype;
  const originalSlice = SharedArrayBufferPrototype.slice;
  const guarded = (allocate) => {
    try {
      return allocate();
    } catch (e) {
      if (isEngineInternal(e)) {
        opOutOfMemory();
        throw new ProgramError("unreachable: the program was stopped at its memory limit");
      }
      throw e;
    }
  };
  const handler = ObjectCreate(null);
  handler.construct = (target, args, newTarget) =>
    guarded(() => ReflectConstruct(target, args, newTarget === WrappedSharedArrayBuffer ? target : newTarget));
  const WrappedSharedArrayBuffer = new ProxyCtor(OriginalSharedArrayBuffer, handler);
  defineValue(SharedArrayBufferPrototype, "constructor", WrappedSharedArrayBuffer, { __proto__: null, writable: true, configurable: true });
  defineValue(SharedArrayBufferPrototype, "slice", function slice(start, end) {
    return guarded(() => ReflectApply(originalSlice, this, [start, end]));
  }, { __proto__: null, writable: true, configurable: true });
  defineValue(globalThis, "SharedArrayBuffer", WrappedSharedArrayBuffer, { __proto__: null, writable: true, configurable: true });
}

// Time blocked in `Atomics.wait` counts towards the CPU step (see `step_clock.rs`).
wrapAtomicsWait(opBlocking);

// -------------------------------------------------------------- Math.random
// Every worker is a fork of one template, so a generator the engine seeded when the
// template started would hand every program the same sequence. `Math.random` is
// xoshiro128** instead, and the worker reseeds it with the host's fresh entropy for each
// program (`reseed`, called from Rust before the program is compiled), so no program can
// predict another's numbers.
let s0 = 0x9e3779b9, s1 = 0x243f6a88, s2 = 0xb7e15162, s3 = 0x3c6ef372;
const rotl = (x, k) => (x << k) | (x >>> (32 - k));
function next32() {
  const result = MathImul(rotl(MathImul(s1, 5), 7), 9) >>> 0;
  const t = s1 << 9;
  s2 ^= s0;
  s3 ^= s1;
  s1 ^= s2;
  s0 ^= s3;
  s2 ^= t;
  s3 = rotl(s3, 11);
  return result;
}
/** A double in [0, 1) from 53 random bits, as engines build `Math.random`'s. */
function random() {
  return ((next32() >>> 5) * 67108864 + (next32() >>> 6)) / 9007199254740992;
}
defineValue(globalThis.Math, "random", random, { __proto__: null, writable: true, configurable: true });
opRegisterEntropy((a, b, c, d) => {
  s0 = a | 0;
  s1 = b | 0;
  s2 = c | 0;
  s3 = d | 0;
  // The all-zero state is the one state xoshiro never leaves.
  if ((s0 | s1 | s2 | s3) === 0) s0 = 1;
});

// -------------------------------------------------------------------- tools
/** A name with characters other than letters, digits, _ and $ is also reachable with _ in their place. */
function alias(name) {
  let out = "";
  for (let i = 0; i < name.length; i++) {
    const c = StringPrototypeCharCodeAt(name, i);
    const keep = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 36;
    out += keep ? StringPrototypeSlice(name, i, i + 1) : "_";
  }
  return out;
}

function editDistance(a, b) {
  const prev = [];
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0];
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j];
      prev[j] = MathMin(prev[j] + 1, prev[j - 1] + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length];
}

/** Distance between two names; "plugin.tool" pairs score plugin and tool apart. */
function distance(a, b) {
  const da = StringPrototypeIndexOf(a, "."), db = StringPrototypeIndexOf(b, ".");
  if (da >= 0 && db >= 0) {
    return editDistance(StringPrototypeSlice(a, 0, da), StringPrototypeSlice(b, 0, db)) + editDistance(StringPrototypeSlice(a, da + 1), StringPrototypeSlice(b, db + 1));
  }
  return editDistance(a, b);
}

/** The (at most three) candidates nearest to `wanted`. */
function closest(wanted, candidates) {
  const scored = [];
  const lower = StringPrototypeToLowerCase(wanted);
  for (let i = 0; i < candidates.length; i++) {
    ArrayPrototypePush(scored, { __proto__: null, score: distance(lower, StringPrototypeToLowerCase(candidates[i])), name: candidates[i] });
  }
  ArrayPrototypeSort(scored, (x, y) => x.score - y.score || (x.name < y.name ? -1 : 1));
  const out = [];
  for (let i = 0; i < scored.length && i < 3; i++) ArrayPrototypePush(out, scored[i].name);
  return out;
}

/**
 * Property names that stay undefined, so that `await tools.x`, JSON.stringify and
 * similar protocol lookups see an ordinary object, not a tool.
 */
const NOT_TOOLS = new SafeSet(["then", "catch", "finally", "toJSON", "constructor", "prototype", "__proto__", "inspect"]);

/** A function that rejects with `message`, standing in for a tool that does not exist. */
function rejecting(message) {
  return function () { return PromiseReject(new ProgramError(message)); };
}

// ------------------------------------------------------------------- calls
/**
 * The calls whose answers the program's JavaScript has not seen yet, by id (a
 * null-prototype object: the program cannot reach or alter it). When the program ends,
 * these are the calls it never awaited, even when an answer is already in the runtime
 * waiting for its turn behind the program's end.
 */
const callsInFlight = ObjectCreate(null);
let nextCallId = 1;

/** Tells Rust which calls are in flight as the program ends (before its outcome). */
function reportCallsInFlight() {
  let ids = "";
  for (const id in callsInFlight) ids += ids === "" ? id : `,${id}`;
  opCallsInFlight(ids);
}

function makeTool(plugin, tool) {
  const name = `tools.${alias(plugin)}.${alias(tool)}`;
  return function (input) {
    let text;
    try {
      text = input === undefined ? "{}" : JSONStringify(input);
    } catch (e) {
      return PromiseReject(new ProgramTypeError(`${name}: the input cannot be sent as JSON: ${describeThrown(e, 0, false).message}`));
    }
    if (typeof text !== "string") {
      return PromiseReject(new ProgramTypeError(`${name}: the input must be a JSON value, not a ${typeof input}`));
    }
    const id = nextCallId++;
    callsInFlight[id] = true;
    const onAnswer = (answer) => {
      delete callsInFlight[id];
      return JSONParse(answer);
    };
    const onFailure = (error) => {
      delete callsInFlight[id];
      throw new ProgramError(describeThrown(error, 0, false).message);
    };
    return PromisePrototypeThen(opToolCall(plugin, tool, text, id), onAnswer, onFailure);
  };
}

/** A frozen object whose missing string properties are `describeMissing(name)`. */
function guarded(target, describeMissing) {
  const handler = ObjectCreate(null);
  handler.get = (t, prop, receiver) => {
    if (typeof prop !== "string" || ReflectHas(t, prop) || SetPrototypeHas(NOT_TOOLS, prop)) return ReflectGet(t, prop, receiver);
    return describeMissing(prop);
  };
  return new ProxyCtor(target, handler);
}

function hint(names) {
  return names.length ? ` Did you mean ${ArrayPrototypeJoin(names, ", ")}?` : "";
}

/**
 * `tools.$search(query, { plugin, limit })`: the catalog's best tools for what the
 * query says (one phrasing, or an array of several), each
 * `{ call, plugin, tool, description, declaration, score, ranker }`, best first.
 * The host answers it (a call to codemode itself, plugin "$codemode").
 */
function makeSearch() {
  const call = makeTool("$codemode", "search");
  const usage = 'call it as tools.$search("what the tool should do"), tools.$search(["one phrasing", "another"]) or tools.$search(query, { plugin: "name", limit: 10 })';
  const search = function (query, options) {
    let phrasings = query;
    if (ArrayIsArray(query)) {
      // Copied, so that what is checked is what is sent.
      phrasings = [];
      for (let i = 0; i < query.length; i++) {
        const phrasing = query[i];
        if (typeof phrasing !== "string") return PromiseReject(new ProgramTypeError(`tools.$search: phrasing ${i} of the query must be a string, not ${phrasing === null ? "null" : typeof phrasing}; ${usage}`));
        ArrayPrototypePush(phrasings, phrasing);
      }
    } else if (typeof query !== "string") {
      return PromiseReject(new ProgramTypeError(`tools.$search: the query must be a string or an array of strings, not ${query === null ? "null" : typeof query}; ${usage}`));
    }
    const input = { __proto__: null, query: phrasings };
    if (options !== undefined) {
      if (options === null || typeof options !== "object") return PromiseReject(new ProgramTypeError(`tools.$search: the options must be an object; ${usage}`));
      if (options.plugin !== undefined) input.plugin = options.plugin;
      if (options.limit !== undefined) input.limit = options.limit;
    }
    return call(input);
  };
  defineValue(search, "name", "$search", { __proto__: null, configurable: true });
  return search;
}

/**
 * `tools.$skills`: seed 001's deferred catalog. `load(name)` resolves with a skill's
 * instructions and the declarations of the tools it unlocks (callable from then on, in
 * this program and the session's later ones), `loadTool(name)` with one tool's
 * declaration, `discover(query, { plugin, topK })` with tools and skills ranked
 * together. The host answers them (calls to codemode itself, plugin "$codemode").
 */
function makeSkills() {
  const named = (method, usage) => {
    const call = makeTool("$codemode", `skills.${method}`);
    const fn = function (name) {
      if (typeof name !== "string") return PromiseReject(new ProgramTypeError(`tools.$skills.${method}: the name must be a string, not ${name === null ? "null" : typeof name}; ${usage}`));
      return call({ __proto__: null, name });
    };
    defineValue(fn, "name", method, { __proto__: null, configurable: true });
    return fn;
  };
  const discoverCall = makeTool("$codemode", "skills.discover");
  const discoverUsage = 'call it as tools.$skills.discover("what you need to do") or tools.$skills.discover(query, { plugin: "name", topK: 10 })';
  const discover = function (query, options) {
    if (typeof query !== "string") return PromiseReject(new ProgramTypeError(`tools.$skills.discover: the query must be a string, not ${query === null ? "null" : typeof query}; ${discoverUsage}`));
    const input = { __proto__: null, query };
    if (options !== undefined) {
      if (options === null || typeof options !== "object") return PromiseReject(new ProgramTypeError(`tools.$skills.discover: the options must be an object; ${discoverUsage}`));
      if (options.plugin !== undefined) input.plugin = options.plugin;
      if (options.topK !== undefined) input.topK = options.topK;
    }
    return discoverCall(input);
  };
  defineValue(discover, "name", "discover", { __proto__: null, configurable: true });
  const skills = ObjectCreate(ObjectPrototype);
  defineValue(skills, "load", named("load", 'call it as tools.$skills.load("skill name")'), { __proto__: null, enumerable: true });
  defineValue(skills, "loadTool", named("loadTool", 'call it as tools.$skills.loadTool("plugin.tool")'), { __proto__: null, enumerable: true });
  defineValue(skills, "discover", discover, { __proto__: null, enumerable: true });
  return ObjectFreeze(skills);
}

/** `tools` for one program: `catalog` is [{ plugin, tools, unavailable? }]. */
function buildTools(catalog) {
  const root = ObjectCreate(ObjectPrototype);
  const allTools = [];
  // Unavailable plugins by name and by alias: the real name each stands for.
  const unavailable = ObjectCreate(null);
  for (let p = 0; p < catalog.length; p++) {
    const entry = catalog[p];
    if (entry.unavailable !== undefined && entry.unavailable !== null) {
      unavailable[entry.plugin] = entry.plugin;
      if (unavailable[alias(entry.plugin)] === undefined) unavailable[alias(entry.plugin)] = entry.plugin;
      continue;
    }
    for (let t = 0; t < entry.tools.length; t++) ArrayPrototypePush(allTools, `${entry.plugin}.${entry.tools[t]}`);
  }
  for (let p = 0; p < catalog.length; p++) {
    const { plugin, tools } = catalog[p];
    if (unavailable[plugin] !== undefined) continue;
    const group = ObjectCreate(ObjectPrototype);
    for (let t = 0; t < tools.length; t++) {
      const fn = makeTool(plugin, tools[t]);
      defineValue(fn, "name", tools[t], { __proto__: null, configurable: true });
      defineValue(group, tools[t], fn, { __proto__: null, enumerable: true });
    }
    // Aliases after every real name: a tool named get_x wins over get-x's alias.
    for (let t = 0; t < tools.length; t++) {
      const a = alias(tools[t]);
      if (a !== tools[t] && !ReflectHas(group, a)) defineValue(group, a, group[tools[t]]);
    }
    ObjectFreeze(group);
    const names = tools;
    const proxy = guarded(group, (prop) => {
      const near = closest(prop, names);
      const shown = [];
      for (let i = 0; i < near.length; i++) ArrayPrototypePush(shown, `tools.${alias(plugin)}.${alias(near[i])}`);
      return rejecting(`Unknown tool tools.${alias(plugin)}.${prop}.${near.length ? hint(shown) : ` The plugin ${plugin} has no tools.`}`);
    });
    defineValue(root, plugin, proxy, { __proto__: null, enumerable: true });
  }
  for (let p = 0; p < catalog.length; p++) {
    const plugin = catalog[p].plugin;
    const a = alias(plugin);
    if (a !== plugin && !ReflectHas(root, a) && ReflectHas(root, plugin)) defineValue(root, a, root[plugin]);
  }
  defineValue(root, "$search", makeSearch());
  defineValue(root, "$skills", makeSkills());
  ObjectFreeze(root);
  return guarded(root, (plugin) => {
    const real = unavailable[plugin];
    if (real !== undefined) {
      // The host tries the plugin again on this call (it may have recovered), under
      // the plugin's real name whichever name the program wrote.
      return guarded(ObjectCreate(ObjectPrototype), (tool) => makeTool(real, tool));
    }
    return guarded(ObjectCreate(ObjectPrototype), (tool) => {
      const near = closest(`${plugin}.${tool}`, allTools);
      const shown = [];
      for (let i = 0; i < near.length; i++) ArrayPrototypePush(shown, `tools.${near[i]}`);
      return rejecting(`Unknown tool tools.${plugin}.${tool}: there is no plugin ${plugin}.${near.length ? hint(shown) : " No tools are available."}`);
    });
  });
}

// ------------------------------------------------------------------- result
/** Reports the program's value: JSON text, `undefined`, or why it cannot be JSON. */
function finishValue(value) {
  reportCallsInFlight();
  if (value === undefined) return opFinish("undefined", "");
  if (typeof value === "function") return opFinish("unserializable", "the program returned a function; return data (an object, array, string, number, boolean or null) instead");
  if (typeof value === "symbol") return opFinish("unserializable", "the program returned a symbol; return data instead");
  if (isEngineInternal(value)) return opOutOfMemory();
  let text;
  try {
    text = JSONStringify(value, (key, v) => {
      if (typeof v === "function") throw new ProgramTypeError(`a function at key ${JSONStringify(key)} cannot be written as JSON`);
      if (typeof v === "symbol") throw new ProgramTypeError(`a symbol at key ${JSONStringify(key)} cannot be written as JSON`);
      return v;
    });
  } catch (e) {
    const described = describeThrown(e, insertions);
    if (described.internal) return opOutOfMemory();
    return opFinish("unserializable", `the returned value cannot be written as JSON: ${described.message}`);
  }
  if (typeof text !== "string") return opFinish("undefined", "");
  return opFinish("json", text);
}

/** Reports what the program threw (or a promise it left behind rejected with). */
function finishThrown(value, kind) {
  reportCallsInFlight();
  const described = describeThrown(value, insertions);
  if (described.internal) return opOutOfMemory();
  const failure = {
    __proto__: null,
    name: described.name,
    message: described.message,
    stack: described.stack,
    line: described.line,
    column: described.column,
  };
  return opFinish(kind, JSONStringify(failure));
}

// ------------------------------------------------------------------- driver
/**
 * Runs one compiled program (a function of `tools`). It never throws and returns
 * nothing: every way the program can end is reported through `op_codemode_finish`,
 * which the Rust side waits for.
 */
function drive(program) {
  try {
    start(program);
  } catch (e) {
    try {
      finishThrown(e, "threw");
    } catch {
      // Reporting failed (a termination): the outcome is the limit's.
    }
  }
}

function start(program) {
  const spec = opProgram();
  insertions = spec.positions;
  setProgramInsertions(insertions);
  const tools = buildTools(spec.catalog);
  // A warm worker's rehearsal builds `tools` but leaves the global to its program.
  if (!spec.rehearsal) defineValue(globalThis, "tools", tools);
  const onThrown = (e) => finishThrown(e, "threw");
  const onValue = (value) => {
    if (spec.calls_function_value && typeof value === "function") {
      let next;
      try {
        next = ReflectApply(value, undefined, [tools]);
      } catch (e) {
        return onThrown(e);
      }
      return PromisePrototypeThen(PromiseResolve(next), finishValue, onThrown);
    }
    return finishValue(value);
  };
  let running;
  try {
    running = ReflectApply(program, undefined, [tools]);
  } catch (e) {
    return onThrown(e);
  }
  // Always a promise of the wrapper's async function, unless the program's text
  // replaced the wrapper with a plain function: then its value is the result.
  if (running === null || (typeof running !== "object" && typeof running !== "function")) return onValue(running);
  PromisePrototypeThen(PromisePrototypeThen(running, onValue, onThrown), undefined, onThrown);
}
opRegisterDriver(drive);
// Rust describes what a program's top-level code threw while it was compiled (a
// program may close its wrapper and run code there) with this, never with deno_core's
// conversion.
opRegisterDescriber((value, compiledInsertions) => {
  const described = describeThrown(value, compiledInsertions);
  return JSONStringify({
    __proto__: null,
    name: described.name,
    message: described.message,
    stack: described.stack,
    line: described.line,
    column: described.column,
    internal: described.internal,
  });
});

// A promise the program left rejected with nobody to handle it: reported like a
// throw (the first one), never through deno_core's own conversion.
core.setUnhandledPromiseRejectionHandler((promise, reason) => {
  try {
    finishThrown(reason, "unhandled");
  } catch {
    // Reporting failed (a termination): the outcome is the limit's.
  }
  return true;
});

// ------------------------------------------------------------- global scope
// The ECMAScript language, `console`, and `tools` (defined per program by `start`).
keepOnlyGlobals([["console", consoleObject, true]]);
