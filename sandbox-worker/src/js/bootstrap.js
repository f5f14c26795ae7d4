// The worker's JavaScript side, evaluated once per process before any user code.
//
// It takes the three codemode ops out of Deno.core, builds `console`, registers the
// driver that runs one program, and then strips the global scope down to the
// ECMAScript language, `tools` (added per program) and `console`. If anything else
// is left on the global object, it throws: the worker must not run user code then.
(function bootstrap() {
  "use strict";
  const core = globalThis.Deno.core;
  const {
    op_codemode_tool_call: opToolCall,
    op_codemode_console: opConsole,
    op_codemode_register_driver: opRegisterDriver,
    op_codemode_program: opProgram,
    op_codemode_finish: opFinish,
  } = core.ops;

  // Intrinsics captured before user code can replace them.
  const ObjectCreate = Object.create;
  const ObjectFreeze = Object.freeze;
  const ObjectKeys = Object.keys;
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectGetPrototypeOf = Object.getPrototypeOf;
  const ReflectApply = Reflect.apply;
  const ReflectOwnKeys = Reflect.ownKeys;
  const ReflectHas = Reflect.has;
  const ReflectGet = Reflect.get;
  const JSONStringify = JSON.stringify;
  const JSONParse = JSON.parse;
  const PromiseReject = Promise.reject.bind(Promise);
  const PromiseThen = Promise.prototype.then;
  const ArrayIsArray = Array.isArray;
  const ArrayPrototypeJoin = Array.prototype.join;
  const ArrayPrototypeMap = Array.prototype.map;
  const ArrayPrototypeSort = Array.prototype.sort;
  const ArrayPrototypeSlice = Array.prototype.slice;
  const StringPrototypeReplace = String.prototype.replace;
  const MathMin = Math.min;
  const MathMax = Math.max;
  const StringCtor = String;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const ProxyCtor = Proxy;
  const SetCtor = Set;
  const SetHas = Set.prototype.has;
  const SetAdd = Set.prototype.add;
  const StringPrototypeSplit = String.prototype.split;
  const StringPrototypeIncludes = String.prototype.includes;
  const ArrayPrototypeFilter = Array.prototype.filter;
  const SetDelete = Set.prototype.delete;
  const RegExpPrototypeExec = RegExp.prototype.exec;
  let line1Prefix = 0;
  // A stack as the program's author reads it: no bootstrap frames, line-1 columns
  // without the wrapper's prefix.
  const cleanStack = (stack) => {
    const lines = call(ArrayPrototypeFilter, call(StringPrototypeSplit, stack, "\n"), (l) => !call(StringPrototypeIncludes, l, "codemode:"));
    return call(ArrayPrototypeJoin, call(ArrayPrototypeMap, lines, (l) => call(StringPrototypeReplace, l, /program\.js:1:(\d+)/g, (_, c) => `program.js:1:${MathMax(1, c - line1Prefix)}`)), "\n");
  };
  const errorStack = (e) => { try { const s = e.stack; return typeof s === "string" ? cleanStack(s) : undefined; } catch { return undefined; } };

  const call = (fn, self, ...args) => ReflectApply(fn, self, args);

  // ---------------------------------------------------------------- console
  // Levels match protocol::ConsoleLevel: 0 log, 1 debug, 2 warn, 3 error.
  function inspect(value, seen, depth) {
    switch (typeof value) {
      case "string": return depth === 0 ? value : JSONStringify(value);
      case "number": case "boolean": case "undefined": return StringCtor(value);
      case "bigint": return `${value}n`;
      case "symbol": return value.toString();
      case "function": return `[Function ${value.name || "(anonymous)"}]`;
    }
    if (value === null) return "null";
    if (value instanceof ErrorCtor) return errorStack(value) || `${value.name}: ${value.message}`;
    if (call(SetHas, seen, value)) return "[Circular]";
    if (depth > 6) return ArrayIsArray(value) ? "[Array]" : "[Object]";
    call(SetAdd, seen, value);
    try {
      if (ArrayIsArray(value)) {
        const items = call(ArrayPrototypeMap, call(ArrayPrototypeSlice, value, 0, 100), (v) => inspect(v, seen, depth + 1));
        if (value.length > 100) items.push(`... ${value.length - 100} more items`);
        return `[ ${call(ArrayPrototypeJoin, items, ", ")} ]`;
      }
      const keys = ObjectKeys(value);
      const parts = [];
      for (let i = 0; i < keys.length && i < 100; i++) {
        parts.push(`${keys[i]}: ${inspect(value[keys[i]], seen, depth + 1)}`);
      }
      if (keys.length > 100) parts.push(`... ${keys.length - 100} more keys`);
      return parts.length ? `{ ${call(ArrayPrototypeJoin, parts, ", ")} }` : "{}";
    } catch (e) {
      return "[Uninspectable]";
    } finally {
      call(SetDelete, seen, value);
    }
  }
  function writer(level) {
    return function (...args) {
      const parts = [];
      for (let i = 0; i < args.length; i++) parts.push(inspect(args[i], new SetCtor(), 0));
      opConsole(level, call(ArrayPrototypeJoin, parts, " "));
    };
  }
  const consoleObject = ObjectCreate(Object.prototype);
  for (const [name, level] of [["log", 0], ["info", 0], ["debug", 1], ["trace", 1], ["warn", 2], ["error", 3]]) {
    ObjectDefineProperty(consoleObject, name, { value: writer(level), writable: true, enumerable: true, configurable: true });
  }

  // ------------------------------------------------------------------ tools
  // A name with characters other than letters, digits, _ and $ is also reachable with _ in their place.
  const alias = (name) => call(StringPrototypeReplace, name, /[^A-Za-z0-9_$]/g, "_");

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
  // Candidates nearest to `wanted`; a "plugin.tool" pair scores plugin and tool apart.
  function distance(a, b) {
    const pa = call(StringPrototypeSplit, a, "."), pb = call(StringPrototypeSplit, b, ".");
    if (pa.length === 2 && pb.length === 2) return editDistance(pa[0], pb[0]) + editDistance(pa[1], pb[1]);
    return editDistance(a, b);
  }
  function closest(wanted, candidates) {
    const scored = call(ArrayPrototypeMap, candidates, (c) => [distance(wanted.toLowerCase(), c.toLowerCase()), c]);
    call(ArrayPrototypeSort, scored, (x, y) => x[0] - y[0] || (x[1] < y[1] ? -1 : 1));
    return call(ArrayPrototypeMap, call(ArrayPrototypeSlice, scored, 0, 3), (s) => s[1]);
  }
  // Property names that must stay undefined so that `await tools.x`, JSON.stringify and
  // similar protocol lookups see an ordinary object, not a tool.
  const NOT_TOOLS = new SetCtor(["then", "catch", "finally", "toJSON", "constructor", "prototype", "__proto__", "inspect"]);

  function unknownTool(message) {
    return function () { return PromiseReject(new ErrorCtor(message)); };
  }

  function makeTool(plugin, tool) {
    const onAnswer = (text) => JSONParse(text);
    const onFailure = (error) => { throw new ErrorCtor(error && error.message); };
    return function (input) {
      let text;
      try {
        text = input === undefined ? "{}" : JSONStringify(input);
      } catch (e) {
        return PromiseReject(new TypeErrorCtor(`tools.${plugin}.${tool}: the input cannot be sent as JSON: ${e && e.message}`));
      }
      if (text === undefined) {
        return PromiseReject(new TypeErrorCtor(`tools.${plugin}.${tool}: the input must be a JSON value, not a ${typeof input}`));
      }
      return call(PromiseThen, opToolCall(plugin, tool, text), onAnswer, onFailure);
    };
  }

  function guarded(target, describeMissing) {
    return new ProxyCtor(target, {
      get(t, prop, receiver) {
        if (typeof prop !== "string" || ReflectHas(t, prop) || call(SetHas, NOT_TOOLS, prop)) return ReflectGet(t, prop, receiver);
        return describeMissing(prop);
      },
    });
  }

  function buildTools(catalog) {
    const root = ObjectCreate(Object.prototype);
    const allTools = [];
    for (const { plugin, tools } of catalog) {
      for (const tool of tools) allTools.push(`${plugin}.${tool}`);
    }
    for (const { plugin, tools } of catalog) {
      const group = ObjectCreate(Object.prototype);
      const names = [];
      for (const tool of tools) {
        const fn = makeTool(plugin, tool);
        ObjectDefineProperty(fn, "name", { value: tool });
        ObjectDefineProperty(group, tool, { value: fn, enumerable: true });
        names.push(tool);
      }
      // Aliases after every real name: a tool named get_x wins over get-x's alias.
      for (const tool of tools) {
        const a = alias(tool);
        if (a !== tool && !ReflectHas(group, a)) ObjectDefineProperty(group, a, { value: group[tool], enumerable: false });
      }
      ObjectFreeze(group);
      const proxy = guarded(group, (prop) => {
        const near = closest(prop, names);
        const hint = near.length ? ` Did you mean ${call(ArrayPrototypeJoin, call(ArrayPrototypeMap, near, (n) => `tools.${alias(plugin)}.${alias(n)}`), ", ")}?` : ` The plugin ${plugin} has no tools.`;
        return unknownTool(`Unknown tool tools.${alias(plugin)}.${prop}.${hint}`);
      });
      ObjectDefineProperty(root, plugin, { value: proxy, enumerable: true });
    }
    // Aliases after every real name, as for tools.
    for (const { plugin } of catalog) {
      const a = alias(plugin);
      if (a !== plugin && !ReflectHas(root, a)) ObjectDefineProperty(root, a, { value: root[plugin], enumerable: false });
    }
    ObjectFreeze(root);
    return guarded(root, (plugin) => {
      const missing = (tool) => {
        const near = closest(`${plugin}.${tool}`, allTools);
        const hint = near.length ? ` Did you mean ${call(ArrayPrototypeJoin, call(ArrayPrototypeMap, near, (n) => `tools.${n}`), ", ")}?` : " No tools are available.";
        return unknownTool(`Unknown tool tools.${plugin}.${tool}: there is no plugin ${plugin}.${hint}`);
      };
      return guarded(ObjectCreate(Object.prototype), missing);
    });
  }

  // ----------------------------------------------------------------- result
  function serialize(value, form) {
    if (value === undefined) return opFinish("undefined", "");
    if (typeof value === "function") return opFinish("unserializable", "the program returned a function; return data (an object, array, string, number, boolean or null) instead");
    if (typeof value === "symbol") return opFinish("unserializable", "the program returned a symbol; return data instead");
    let text;
    try {
      text = JSONStringify(value, function (key, v) {
        if (typeof v === "function") throw new TypeErrorCtor(`a function at key ${JSONStringify(key)} cannot be written as JSON`);
        if (typeof v === "symbol") throw new TypeErrorCtor(`a symbol at key ${JSONStringify(key)} cannot be written as JSON`);
        return v;
      });
    } catch (e) {
      return opFinish("unserializable", `the returned value cannot be written as JSON: ${e && e.message}`);
    }
    return opFinish("json", text);
  }

  // ----------------------------------------------------------------- driver
  // Called from Rust with the compiled program (a function of `tools`).
  async function drive(program) {
    const { catalog, expression, line1_prefix } = opProgram();
    line1Prefix = line1_prefix;
    const tools = buildTools(catalog);
    ObjectDefineProperty(globalThis, "tools", { value: tools, enumerable: false, configurable: false, writable: false });
    let value = await program(tools);
    if (expression && typeof value === "function") value = await value(tools);
    serialize(value);
  }
  opRegisterDriver(drive);

  // ------------------------------------------------------- global scope audit
  // The ECMAScript language (ECMA-262 and ECMA-402 globals) and nothing else.
  const LANGUAGE = new SetCtor([
    "globalThis", "Infinity", "NaN", "undefined", "eval", "isFinite", "isNaN", "parseFloat", "parseInt",
    "decodeURI", "decodeURIComponent", "encodeURI", "encodeURIComponent", "escape", "unescape",
    "Object", "Function", "Boolean", "Symbol", "Error", "AggregateError", "EvalError", "RangeError",
    "ReferenceError", "SyntaxError", "TypeError", "URIError", "SuppressedError", "Number", "BigInt", "Math", "Date",
    "String", "RegExp", "Array", "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
    "Int32Array", "Uint32Array", "BigInt64Array", "BigUint64Array", "Float16Array", "Float32Array", "Float64Array",
    "Map", "Set", "WeakMap", "WeakSet", "ArrayBuffer", "SharedArrayBuffer", "DataView", "Atomics", "JSON",
    "WeakRef", "FinalizationRegistry", "Iterator", "Promise", "Proxy", "Reflect", "DisposableStack",
    "AsyncDisposableStack", "Intl", "Temporal",
  ]);
  for (const key of ReflectOwnKeys(globalThis)) {
    if (typeof key === "string" && call(SetHas, LANGUAGE, key)) continue;
    delete globalThis[key];
  }
  ObjectDefineProperty(globalThis, "console", { value: consoleObject, writable: true, enumerable: false, configurable: true });
  const left = [];
  for (const key of ReflectOwnKeys(globalThis)) {
    if (typeof key !== "string" || (!call(SetHas, LANGUAGE, key) && key !== "console")) left.push(StringCtor(key));
  }
  if (left.length) throw new ErrorCtor(`the global scope still holds non-language names after cleanup: ${call(ArrayPrototypeJoin, left, ", ")}`);
  if (ObjectGetPrototypeOf(globalThis) !== Object.prototype) throw new ErrorCtor("the global object has an unexpected prototype");
})();
