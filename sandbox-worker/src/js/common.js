// What both JavaScript runtimes share (programs' `bootstrap.js`, plugins' `plugin.js`).
//
// A module of the bundle step (`sandbox-worker/build.rs`): it runs in a function of
// its own inside one function of deno_core's `primordials`, so nothing here is a
// global, and it gives the runtimes only what its `export` line names. Everything is built on primordials and on objects without a prototype:
// after a program or plugin replaces `Array.prototype.push`, `String.prototype`
// methods, `Object.prototype` accessors or `globalThis.Object`, the console, tool
// calls and error reports still work.
//
// - `describeThrown` turns anything thrown or rejected into { name, message, stack,
//   line, column } without trusting it: every read is guarded, every text is cut, and
//   an engine-internal value (what QuickJS throws when a native allocation fails) is
//   reported as such instead of reaching Rust's error conversion;
// - `inspect` and `makeConsole` format console arguments the same way in both runtimes.
//
// The runtime's own script imports the `common` object and takes what it needs from it.

const common = (function () {
  const {
    ArrayIsArray,
    ArrayPrototypePush,
    ArrayPrototypeJoin,
    Error: ErrorCtor,
    ErrorPrototype,
    JSONStringify,
    MathMin,
    MathMax,
    ObjectCreate,
    ObjectDefineProperty,
    ObjectGetPrototypeOf,
    ObjectKeys,
    ObjectPrototype,
    ObjectPrototypeIsPrototypeOf,
    ReflectDeleteProperty,
    ReflectOwnKeys,
    SafeSet,
    SetPrototypeHas,
    SetPrototypeAdd,
    SetPrototypeDelete,
    String: StringCtor,
    StringPrototypeCharCodeAt,
    StringPrototypeIndexOf,
    StringPrototypeSlice,
    SymbolPrototypeToString,
    ReflectApply,
  } = primordials;

  /** Longest `name` kept from a thrown value. */
  const MAX_NAME_CHARS = 200;
  /** Longest message kept from a thrown value (a 70 MiB message must not become a 70 MiB frame). */
  const MAX_MESSAGE_CHARS = 16 * 1024;
  /** Longest stack kept. */
  const MAX_STACK_CHARS = 16 * 1024;
  /** How many causes (`cause`, `AggregateError.errors`) a report follows. */
  const MAX_CAUSES = 4;

  /** The kinds `typeof` gives for ECMAScript values; anything else is the engine's own. */
  const LANGUAGE_TYPES = new SafeSet(["undefined", "object", "boolean", "number", "bigint", "string", "symbol", "function"]);

  /** True for a value that is not an ECMAScript value (QuickJS's "uninitialized" marker). */
  function isEngineInternal(value) {
    return !SetPrototypeHas(LANGUAGE_TYPES, typeof value);
  }

  /** `text` cut to `max` characters, saying how much was dropped. */
  function cut(text, max) {
    if (text.length <= max) return text;
    return `${StringPrototypeSlice(text, 0, max)}… [cut: ${text.length - max} more characters]`;
  }

  /** Reads `object[key]` without letting a getter's or a Proxy trap's exception through. */
  function guardedGet(object, key) {
    try {
      return { __proto__: null, ok: true, value: object[key] };
    } catch {
      return { __proto__: null, ok: false, value: undefined };
    }
  }

  /** A value as text, whatever it is; its own `toString` may run (under the step clock). */
  function textOf(value) {
    switch (typeof value) {
      case "string": return value;
      case "symbol": return SymbolPrototypeToString(value);
      case "undefined": case "number": case "boolean": case "bigint": return StringCtor(value);
      case "function": {
        const name = guardedGet(value, "name");
        return `[Function ${typeof name.value === "string" && name.value ? name.value : "(anonymous)"}]`;
      }
    }
    if (value === null) return "null";
    if (isEngineInternal(value)) return "[an engine-internal value]";
    let text;
    try {
      text = StringCtor(value);
    } catch {
      text = undefined;
    }
    // "[object Object]" says nothing: a plain object's data says more.
    if (text === undefined || text === "[object Object]") {
      try {
        const json = JSONStringify(value);
        if (typeof json === "string") return json;
      } catch {
        // Not JSON either.
      }
    }
    if (typeof text === "string") return text;
    return "[an object that cannot be converted to text]";
  }

  /** True when `value` is an Error (by its prototype chain; a throwing Proxy is not). */
  function isError(value) {
    try {
      return ObjectPrototypeIsPrototypeOf(ErrorPrototype, value);
    } catch {
      return false;
    }
  }

  /**
   * Reads the decimal number at `text[from]`: `{ value, end }`, `value` -1 when there
   * are no digits there. (An object, not an array: destructuring an array calls
   * `Array.prototype[Symbol.iterator]`, which a program may have replaced.)
   */
  function numberAt(text, from) {
    let n = 0, i = from;
    for (; i < text.length; i++) {
      const c = StringPrototypeCharCodeAt(text, i);
      if (c < 48 || c > 57) break;
      n = n * 10 + (c - 48);
    }
    return { __proto__: null, value: i > from ? n : -1, end: i };
  }

  /** The program's first `program.js:LINE:COLUMN` in a (cleaned) stack, as numbers. */
  function positionIn(stack) {
    const marker = "program.js:";
    const at = StringPrototypeIndexOf(stack, marker);
    if (at < 0) return undefined;
    const line = numberAt(stack, at + marker.length);
    if (line.value < 0 || StringPrototypeCharCodeAt(stack, line.end) !== 58 /* : */) return undefined;
    const column = numberAt(stack, line.end + 1);
    if (column.value < 0) return undefined;
    return { __proto__: null, line: line.value, column: column.value };
  }

  /**
   * The program's own column for `column` on `line` of the compiled program:
   * `insertions` is `[line, at, by, ...]`, text the runtime inserted (the wrapper's
   * prefix on line 1, a `return`); a position inside inserted text maps to where it
   * was inserted. The same rule as `Positions::column` in `source.rs`.
   */
  function programColumn(insertions, line, column) {
    // Right to left: the insertions are listed in source order.
    for (let i = insertions.length - 3; i >= 0; i -= 3) {
      if (insertions[i] !== line) continue;
      const at = insertions[i + 1], by = insertions[i + 2];
      if (column >= at + by) column -= by;
      else if (column >= at) column = at;
    }
    return MathMax(1, column);
  }


  /**
   * `text` split at each newline. (`String.prototype.split` looks up
   * `String.prototype[Symbol.split]`, which a program may have replaced.)
   */
  function splitLines(text) {
    const lines = [];
    let start = 0;
    for (;;) {
      const at = StringPrototypeIndexOf(text, "\n", start);
      if (at < 0) break;
      ArrayPrototypePush(lines, StringPrototypeSlice(text, start, at));
      start = at + 1;
    }
    ArrayPrototypePush(lines, StringPrototypeSlice(text, start));
    return lines;
  }

  /**
   * A stack as the program's author reads it: no frames of codemode's own scripts, and
   * every `program.js:LINE:COLUMN` without the text the runtime inserted.
   */
  function cleanStack(stack, insertions) {
    const lines = splitLines(stack);
    const kept = [];
    const marker = "program.js:";
    for (let i = 0; i < lines.length; i++) {
      let line = lines[i];
      if (StringPrototypeIndexOf(line, "codemode:") >= 0) continue;
      const at = StringPrototypeIndexOf(line, marker);
      if (at >= 0) {
        const number = numberAt(line, at + marker.length);
        if (number.value >= 0 && StringPrototypeCharCodeAt(line, number.end) === 58 /* : */) {
          const column = numberAt(line, number.end + 1);
          if (column.value >= 0) {
            const mapped = programColumn(insertions, number.value, column.value);
            line = `${StringPrototypeSlice(line, 0, number.end + 1)}${mapped}${StringPrototypeSlice(line, column.end)}`;
          }
        }
      }
      ArrayPrototypePush(kept, line);
    }
    return ArrayPrototypeJoin(kept, "\n");
  }

  /**
   * Text the runtime inserted into the program it compiled, `[line, at, by, ...]` (set
   * per program by the program runtime; none elsewhere).
   */
  let programInsertions = [];
  function setProgramInsertions(insertions) {
    programInsertions = insertions;
  }

  /**
   * Describes a thrown or rejected value: `{ name, message, stack?, line?, column?,
   * internal }`. Never throws (a termination still ends the program, as it must).
   * `internal` is true for an engine-internal value, which the caller reports as the
   * memory limit: QuickJS throws one when a native allocation fails.
   */
  function describeThrown(value, insertions = programInsertions, withCauses = true) {
    if (isEngineInternal(value)) {
      return { __proto__: null, name: "InternalError", message: "an allocation failed", internal: true };
    }
    if (!isError(value)) {
      return { __proto__: null, name: "", message: cut(textOf(value), MAX_MESSAGE_CHARS), internal: false };
    }
    const name = guardedGet(value, "name");
    const message = guardedGet(value, "message");
    const stack = guardedGet(value, "stack");
    const report = {
      __proto__: null,
      name: cut(typeof name.value === "string" ? name.value : "Error", MAX_NAME_CHARS),
      message: cut(typeof message.value === "string" ? message.value : textOf(message.value), MAX_MESSAGE_CHARS),
      internal: false,
    };
    // Cut before cleaning: a 30 MiB message makes a 30 MiB stack, and only the first
    // MAX_STACK_CHARS are kept anyway.
    let stackText = typeof stack.value === "string" ? cleanStack(cut(stack.value, MAX_STACK_CHARS), insertions) : "";
    const position = stackText ? positionIn(stackText) : undefined;
    if (position) {
      report.line = position.line;
      report.column = position.column;
    }
    if (withCauses) stackText += causes(value, insertions);
    if (stackText) report.stack = cut(stackText, MAX_STACK_CHARS);
    return report;
  }

  /**
   * The causes of an error, as stack lines: its `cause` chain, followed for at most
   * MAX_CAUSES links (each described without its own causes, so a chain of any length
   * costs the same), and an AggregateError's `errors`.
   */
  function causes(error, insertions) {
    let text = "";
    let current = error;
    for (let depth = 0; ; depth++) {
      const cause = guardedGet(current, "cause");
      if (!cause.ok || cause.value === undefined) break;
      if (depth === MAX_CAUSES) {
        text += "\nCaused by: ... (more causes)";
        break;
      }
      const described = describeThrown(cause.value, insertions, false);
      text += `\nCaused by: ${described.name ? `${described.name}: ` : ""}${cut(described.message, 1024)}`;
      if (!isError(cause.value)) break;
      current = cause.value;
    }
    const errors = guardedGet(error, "errors");
    if (errors.ok && ArrayIsArray(errors.value)) {
      const list = errors.value;
      const shown = MathMin(list.length, MAX_CAUSES);
      for (let i = 0; i < shown; i++) {
        const item = guardedGet(list, i);
        const described = describeThrown(item.value, insertions, false);
        text += `\n  [${i}] ${described.name ? `${described.name}: ` : ""}${cut(described.message, 1024)}`;
      }
      if (list.length > shown) text += `\n  ... ${list.length - shown} more`;
    }
    return text;
  }

  // ---------------------------------------------------------------------- console

  /** How deep `inspect` descends into objects and arrays. */
  const MAX_INSPECT_DEPTH = 6;
  /** How many items or keys `inspect` shows per object. */
  const MAX_INSPECT_ITEMS = 100;

  /** Formats one console argument (strings as they are at the top level). */
  function inspect(value, seen, depth) {
    switch (typeof value) {
      case "string": return depth === 0 ? value : JSONStringify(value);
      case "number": case "boolean": case "undefined": return StringCtor(value);
      case "bigint": return `${StringCtor(value)}n`;
      case "symbol": return SymbolPrototypeToString(value);
      case "function": return textOf(value);
    }
    if (value === null) return "null";
    if (isEngineInternal(value)) return "[an engine-internal value]";
    if (isError(value)) {
      const described = describeThrown(value);
      return described.stack || `${described.name}: ${described.message}`;
    }
    if (SetPrototypeHas(seen, value)) return "[Circular]";
    try {
      const array = ArrayIsArray(value);
      if (depth > MAX_INSPECT_DEPTH) return array ? "[Array]" : "[Object]";
      SetPrototypeAdd(seen, value);
      const parts = [];
      if (array) {
        const shown = MathMin(value.length, MAX_INSPECT_ITEMS);
        for (let i = 0; i < shown; i++) ArrayPrototypePush(parts, inspect(value[i], seen, depth + 1));
        if (value.length > shown) ArrayPrototypePush(parts, `... ${value.length - shown} more items`);
        return `[ ${ArrayPrototypeJoin(parts, ", ")} ]`;
      }
      const keys = ObjectKeys(value);
      const shown = MathMin(keys.length, MAX_INSPECT_ITEMS);
      for (let i = 0; i < shown; i++) ArrayPrototypePush(parts, `${keys[i]}: ${inspect(value[keys[i]], seen, depth + 1)}`);
      if (keys.length > shown) ArrayPrototypePush(parts, `... ${keys.length - shown} more keys`);
      return parts.length ? `{ ${ArrayPrototypeJoin(parts, ", ")} }` : "{}";
    } catch {
      return "[Uninspectable]";
    } finally {
      SetPrototypeDelete(seen, value);
    }
  }

  /**
   * A `console` whose methods format their arguments and hand one line to
   * `write(level, text)`. Levels: 0 log, 1 debug, 2 warn, 3 error.
   */
  function makeConsole(write) {
    // Strings (the usual case) are written as they are, without formatting machinery.
    const one = (value) => (typeof value === "string" ? value : inspect(value, new SafeSet(), 0));
    const line = (args) => {
      if (args.length === 1) return one(args[0]);
      let text = "";
      for (let i = 0; i < args.length; i++) text += (i ? " " : "") + one(args[i]);
      return text;
    };
    const console = ObjectCreate(ObjectPrototype);
    const methods = [["log", 0], ["info", 0], ["debug", 1], ["trace", 1], ["warn", 2], ["error", 3], ["dir", 0]];
    for (let i = 0; i < methods.length; i++) {
      const name = methods[i][0], level = methods[i][1];
      ObjectDefineProperty(console, name, {
        __proto__: null,
        value: function (...args) { write(level, line(args)); },
        writable: true,
        enumerable: true,
        configurable: true,
      });
    }
    ObjectDefineProperty(console, "assert", {
      __proto__: null,
      value: function (condition, ...args) {
        if (condition) return;
        write(3, args.length ? `Assertion failed: ${line(args)}` : "Assertion failed");
      },
      writable: true,
      enumerable: true,
      configurable: true,
    });
    return console;
  }

  // ----------------------------------------------------------------- global scope

  /** The ECMAScript language's globals (ECMA-262 and ECMA-402): what every runtime keeps. */
  const LANGUAGE_GLOBALS = new SafeSet([
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

  /**
   * Strips the global object to the ECMAScript language plus `extras` (`[name, value,
   * writable]`, defined configurable and not enumerable), then checks the result: a
   * runtime whose global scope still holds anything else throws instead of running
   * user code. An allowlist, so whatever the engine or deno_core adds is removed.
   */
  function keepOnlyGlobals(extras) {
    const wanted = new SafeSet();
    for (let i = 0; i < extras.length; i++) SetPrototypeAdd(wanted, extras[i][0]);
    const keys = ReflectOwnKeys(globalThis);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (typeof key === "string" && SetPrototypeHas(LANGUAGE_GLOBALS, key)) continue;
      ReflectDeleteProperty(globalThis, key);
    }
    for (let i = 0; i < extras.length; i++) {
      defineValue(globalThis, extras[i][0], extras[i][1], { __proto__: null, writable: extras[i][2], configurable: true });
    }
    const left = [];
    const remaining = ReflectOwnKeys(globalThis);
    for (let i = 0; i < remaining.length; i++) {
      const key = remaining[i];
      if ((typeof key === "string" && SetPrototypeHas(LANGUAGE_GLOBALS, key)) || SetPrototypeHas(wanted, key)) continue;
      ArrayPrototypePush(left, typeof key === "string" ? key : "a symbol");
    }
    if (left.length) throw new ErrorCtor(`the global scope still holds names outside the allowlist after cleanup: ${ArrayPrototypeJoin(left, ", ")}`);
    if (ObjectGetPrototypeOf(globalThis) !== ObjectPrototype) throw new ErrorCtor("the global object has an unexpected prototype");
  }

  /** Defines a value property from a null-prototype descriptor (immune to Object.prototype accessors). */
  function defineValue(object, key, value, { writable = false, enumerable = false, configurable = false } = { __proto__: null }) {
    ObjectDefineProperty(object, key, { __proto__: null, value, writable, enumerable, configurable });
  }

  // ------------------------------------------------------------- blocking

  /**
   * Wraps `Atomics.wait`, the one way JavaScript can block its thread, so that the
   * step clock, which counts the thread's CPU time, counts time blocked there too:
   * `report(true)` before the wait, `report(false)` after it, however it ends. The
   * engine's own `wait` stays in this closure; nothing a program or plugin reaches
   * can call it unreported.
   */
  function wrapAtomicsWait(report) {
    const atomics = globalThis.Atomics;
    const original = atomics === undefined ? undefined : atomics.wait;
    if (typeof original !== "function") return;
    defineValue(atomics, "wait", function wait(typedArray, index, value, timeout) {
      report(true);
      try {
        return ReflectApply(original, atomics, [typedArray, index, value, timeout]);
      } finally {
        report(false);
      }
    }, { __proto__: null, writable: true, configurable: true });
  }

  return {
    __proto__: null,
    cut,
    defineValue,
    describeThrown,
    inspect,
    isEngineInternal,
    keepOnlyGlobals,
    makeConsole,
    setProgramInsertions,
    textOf,
    wrapAtomicsWait,
  };
})();

export { common };
