// The web-platform pieces a plugin runtime offers its modules, and npm packages expect:
// `AbortController`/`AbortSignal`, timers, `queueMicrotask`, `TextEncoder`/`TextDecoder`,
// and `fetch` with `Headers` and `Response` (every request goes to the host as
// `host/fetch` and is checked there against the plugin's network allowlist).
//
// A module of the bundle step (`build.rs`), after `common.js` and before `plugin.js`:
// imports `common`, exports one object, `web`. Timers fire from the event loop:
// `plugin.js` tells Rust the next deadline (`op_plugin_timers`), Rust waits for the
// host's next message no longer than that, and a `timers` delivery runs what is due.
import { common } from "../../js/common.js";

const web = (function () {
  const core = globalThis.Deno.core;
  const { op_plugin_timers: opTimers, op_plugin_log: opLog, op_plugin_now: opNow } = core.ops;
  // A timer's callback runs in the async context it was set in (the call whose code set
  // it: `plugin.js`), as Node's timers keep AsyncLocalStorage.
  const { getAsyncContext, setAsyncContext } = core;
  const encodeText = core.encode;
  const decodeText = core.decode;
  const {
    ArrayBufferIsView,
    ArrayIsArray,
    ObjectFreeze,
    ArrayPrototypeJoin,
    ArrayPrototypePush,
    ArrayPrototypeSlice,
    ArrayPrototypeSort,
    NumberPrototypeToString,
    ObjectDefineProperty,
    SafeRegExp,
    StringPrototypeCharCodeAt,
    StringPrototypeIndexOf,
    StringPrototypeReplace,
    StringPrototypeSlice,
    StringPrototypeSplit,
    DateNow,
    Error: ErrorCtor,
    JSONParse,
    MapPrototypeDelete,
    MapPrototypeForEach,
    MapPrototypeGet,
    MapPrototypeSet,
    MathMax,
    NumberIsFinite,
    ObjectEntries,
    PromisePrototypeThen,
    PromiseReject,
    PromiseResolve,
    ReflectApply,
    SafeArrayIterator,
    SafeMap,
    SafeWeakMap,
    String: StringCtor,
    StringPrototypeToLowerCase,
    StringPrototypeToUpperCase,
    TypeError: TypeErrorCtor,
    Uint8Array: Uint8ArrayCtor,
    WeakMapPrototypeGet,
    WeakMapPrototypeSet,
  } = primordials;

  // ---------------------------------------------------------- abort signals
  function abortError(reason) {
    const e = new ErrorCtor(typeof reason === "string" ? reason : "the operation was aborted");
    e.name = "AbortError";
    return e;
  }

  const signalState = new SafeWeakMap();
  class AbortSignal {
    constructor(key) {
      if (key !== signalState) throw new TypeErrorCtor("AbortSignal is made by an AbortController");
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
    static timeout(ms) {
      const controller = new AbortController();
      setTimeout(() => controller.abort(abortError(`the operation timed out after ${ms} ms`)), ms);
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
          opLog(3, `an abort listener threw: ${common.describeThrown(e, []).message}`);
        }
      };
      run(signal.onabort);
      for (let i = 0; i < listeners.length; i++) run(listeners[i].listener);
    }
  }

  // ------------------------------------------------------------------ timers
  // Deadlines are on the runtime's monotonic clock (`op_plugin_now`, milliseconds since
  // the runtime started), as Rust's wait is: a change of the wall clock moves neither.
  const performance = ObjectFreeze({ now: () => opNow(), timeOrigin: DateNow() - opNow() });
  /** id -> { deadline, callback, args, interval, context } */
  const timers = new SafeMap();
  let nextTimer = 1;
  /** The deadline Rust was last told, or -1 for none. */
  let announced = -1;

  function announce() {
    let next = -1;
    MapPrototypeForEach(timers, (timer) => {
      if (next === -1 || timer.deadline < next) next = timer.deadline;
    });
    if (next !== announced) {
      announced = next;
      opTimers(next === -1 ? -1 : MathMax(0, next - opNow()));
    }
  }

  function delayOf(ms) {
    const n = +ms;
    return NumberIsFinite(n) && n > 0 ? n : 0;
  }

  function schedule(callback, ms, args, interval) {
    if (typeof callback !== "function") throw new TypeErrorCtor("a timer's callback must be a function (codemode runs no code from strings)");
    const id = nextTimer++;
    const delay = delayOf(ms);
    MapPrototypeSet(timers, id, { __proto__: null, deadline: opNow() + delay, callback, args, interval: interval ? delay : -1, context: getAsyncContext() });
    announce();
    return id;
  }

  function clear(id) {
    if (MapPrototypeDelete(timers, +id)) announce();
  }

  /** Runs every timer that is due (the `timers` delivery), then announces the next deadline. */
  function fireTimers() {
    const now = opNow();
    const due = [];
    MapPrototypeForEach(timers, (timer, id) => {
      if (timer.deadline <= now) ArrayPrototypePush(due, id);
    });
    for (let i = 0; i < due.length; i++) {
      const timer = MapPrototypeGet(timers, due[i]);
      if (!timer) continue;
      if (timer.interval >= 0) timer.deadline = now + MathMax(timer.interval, 1);
      else MapPrototypeDelete(timers, due[i]);
      const previous = getAsyncContext();
      setAsyncContext(timer.context);
      try {
        ReflectApply(timer.callback, undefined, timer.args);
      } catch (e) {
        opLog(3, `a timer callback threw: ${common.describeThrown(e, []).message}`);
      } finally {
        setAsyncContext(previous);
      }
    }
    announced = -2;
    announce();
  }

  const timerGlobals = {
    setTimeout: (callback, ms, ...args) => schedule(callback, ms, args, false),
    setInterval: (callback, ms, ...args) => schedule(callback, ms, args, true),
    clearTimeout: clear,
    clearInterval: clear,
    queueMicrotask: (callback) => {
      if (typeof callback !== "function") throw new TypeErrorCtor("queueMicrotask takes a function");
      PromisePrototypeThen(PromiseResolve(), () => callback());
    },
  };

  // ---------------------------------------------------------------- encoders
  class TextEncoder {
    get encoding() { return "utf-8"; }
    encode(text = "") { return encodeText(StringCtor(text)); }
  }

  class TextDecoder {
    #fatal;
    constructor(label = "utf-8", options = undefined) {
      const name = StringPrototypeToLowerCase(StringCtor(label));
      if (name !== "utf-8" && name !== "utf8" && name !== "unicode-1-1-utf-8") {
        throw new TypeErrorCtor(`TextDecoder: codemode decodes UTF-8 only, not ${label}`);
      }
      this.#fatal = !!(options && options.fatal);
    }
    get encoding() { return "utf-8"; }
    get fatal() { return this.#fatal; }
    decode(bytes = new Uint8ArrayCtor(0)) {
      const view = ArrayBufferIsView(bytes)
        ? new Uint8ArrayCtor(bytes.buffer, bytes.byteOffset, bytes.byteLength)
        : new Uint8ArrayCtor(bytes);
      const text = decodeText(view);
      if (this.#fatal) {
        // Valid UTF-8 comes back byte for byte; replaced bytes do not.
        const again = encodeText(text);
        let same = again.length === view.length;
        for (let i = 0; same && i < view.length; i++) same = again[i] === view[i];
        if (!same) throw new TypeErrorCtor("TextDecoder: the bytes are not valid UTF-8");
      }
      return text;
    }
  }

  // --------------------------------------------------------------------- URL
  const { op_plugin_url_parse: opUrlParse, op_plugin_url_set: opUrlSet } = core.ops;
  const URL_PARTS = ["href", "protocol", "username", "password", "host", "hostname", "port", "pathname", "search", "hash"];

  /** `+` and the characters application/x-www-form-urlencoded escapes beyond encodeURIComponent's. */
  function formEncode(text) {
    return StringPrototypeReplace(StringPrototypeReplace(encodeURIComponent(text), FORM_EXTRA, (c) => `%${StringPrototypeToUpperCase(NumberPrototypeToString(StringPrototypeCharCodeAt(c, 0), 16))}`), SPACE_ESCAPE, "+");
  }
  const FORM_EXTRA = new SafeRegExp("[!'()~]", "g");
  const SPACE_ESCAPE = new SafeRegExp("%20", "g");
  const PLUS = new SafeRegExp("\\+", "g");

  function formDecode(text) {
    const spaced = StringPrototypeReplace(text, PLUS, " ");
    try {
      return decodeURIComponent(spaced);
    } catch {
      return spaced;
    }
  }

  /** The value of the first `[name, value]` entry named `name`, or null (URLSearchParams, FormData). */
  function firstValue(entries, name) {
    const wanted = StringCtor(name);
    for (let i = 0; i < entries.length; i++) if (entries[i][0] === wanted) return entries[i][1];
    return null;
  }

  /** The values of every `[name, value]` entry named `name`, in order. */
  function allValues(entries, name) {
    const wanted = StringCtor(name);
    const found = [];
    for (let i = 0; i < entries.length; i++) if (entries[i][0] === wanted) ArrayPrototypePush(found, entries[i][1]);
    return found;
  }

  const searchOwner = new SafeWeakMap();
  class URLSearchParams {
    #list = [];
    constructor(init = undefined) {
      if (init === undefined || init === null) return;
      if (typeof init === "string") {
        this.#parse(init);
      } else if (typeof init === "object" && typeof init[primordials.SymbolIterator] === "function") {
        for (const pair of init) ArrayPrototypePush(this.#list, [StringCtor(pair[0]), StringCtor(pair[1])]);
      } else if (typeof init === "object") {
        const entries = ObjectEntries(init);
        for (let i = 0; i < entries.length; i++) ArrayPrototypePush(this.#list, [entries[i][0], StringCtor(entries[i][1])]);
      } else {
        this.#parse(StringCtor(init));
      }
    }
    #parse(text) {
      this.#list = [];
      const body = text[0] === "?" ? StringPrototypeSlice(text, 1) : text;
      if (body === "") return;
      const pieces = StringPrototypeSplit(body, "&");
      for (let i = 0; i < pieces.length; i++) {
        if (pieces[i] === "") continue;
        const at = StringPrototypeIndexOf(pieces[i], "=");
        const name = at < 0 ? pieces[i] : StringPrototypeSlice(pieces[i], 0, at);
        const value = at < 0 ? "" : StringPrototypeSlice(pieces[i], at + 1);
        ArrayPrototypePush(this.#list, [formDecode(name), formDecode(value)]);
      }
    }
    #changed() {
      const url = WeakMapPrototypeGet(searchOwner, this);
      if (url) url.search = this.toString();
    }
    /** For URL: the query changed from the URL's side. */
    static _reset(params, search) { params.#parse(search); }
    get size() { return this.#list.length; }
    append(name, value) { ArrayPrototypePush(this.#list, [StringCtor(name), StringCtor(value)]); this.#changed(); }
    delete(name, value = undefined) {
      const kept = [];
      for (let i = 0; i < this.#list.length; i++) {
        const n = this.#list[i][0], v = this.#list[i][1];
        if (!(n === StringCtor(name) && (value === undefined || v === StringCtor(value)))) ArrayPrototypePush(kept, this.#list[i]);
      }
      this.#list = kept;
      this.#changed();
    }
    get(name) {
      return firstValue(this.#list, name);
    }
    getAll(name) {
      return allValues(this.#list, name);
    }
    has(name, value = undefined) {
      for (let i = 0; i < this.#list.length; i++) {
        if (this.#list[i][0] === StringCtor(name) && (value === undefined || this.#list[i][1] === StringCtor(value))) return true;
      }
      return false;
    }
    set(name, value) {
      const key = StringCtor(name);
      const kept = [];
      let placed = false;
      for (let i = 0; i < this.#list.length; i++) {
        if (this.#list[i][0] !== key) ArrayPrototypePush(kept, this.#list[i]);
        else if (!placed) { ArrayPrototypePush(kept, [key, StringCtor(value)]); placed = true; }
      }
      if (!placed) ArrayPrototypePush(kept, [key, StringCtor(value)]);
      this.#list = kept;
      this.#changed();
    }
    sort() {
      this.#list = ArrayPrototypeSort(ArrayPrototypeSlice(this.#list), (a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      this.#changed();
    }
    forEach(callback, thisArg = undefined) {
      for (let i = 0; i < this.#list.length; i++) ReflectApply(callback, thisArg, [this.#list[i][1], this.#list[i][0], this]);
    }
    entries() { return new SafeArrayIterator(ArrayPrototypeSlice(this.#list)); }
    keys() { const k = []; for (let i = 0; i < this.#list.length; i++) ArrayPrototypePush(k, this.#list[i][0]); return new SafeArrayIterator(k); }
    values() { const v = []; for (let i = 0; i < this.#list.length; i++) ArrayPrototypePush(v, this.#list[i][1]); return new SafeArrayIterator(v); }
    [primordials.SymbolIterator]() { return this.entries(); }
    toString() {
      const pieces = [];
      for (let i = 0; i < this.#list.length; i++) ArrayPrototypePush(pieces, `${formEncode(this.#list[i][0])}=${formEncode(this.#list[i][1])}`);
      return ArrayPrototypeJoin(pieces, "&");
    }
  }

  class URL {
    #parts;
    #search = null;
    constructor(input, base = undefined) {
      const text = input !== null && typeof input === "object" && #parts in input ? input.href : StringCtor(input);
      const baseText = base === undefined ? null : StringCtor(base !== null && typeof base === "object" && #parts in base ? base.href : base);
      this.#parts = opUrlParse(text, baseText);
    }
    static canParse(input, base = undefined) {
      try {
        new URL(input, base);
        return true;
      } catch {
        return false;
      }
    }
    static parse(input, base = undefined) {
      try {
        return new URL(input, base);
      } catch {
        return null;
      }
    }
    get origin() { return this.#parts.origin; }
    get searchParams() {
      if (this.#search === null) {
        this.#search = new URLSearchParams(this.#parts.search);
        WeakMapPrototypeSet(searchOwner, this.#search, this);
      }
      return this.#search;
    }
    toString() { return this.#parts.href; }
    toJSON() { return this.#parts.href; }
    static {
      // One getter and setter per part; a setter re-parses, as the URL API's do.
      for (let i = 0; i < URL_PARTS.length; i++) {
        const part = URL_PARTS[i];
        ObjectDefineProperty(URL.prototype, part, {
          get() { return this.#parts[part]; },
          set(value) {
            this.#parts = opUrlSet(this.#parts.href, part, StringCtor(value));
            if (this.#search !== null && part !== "hash") URLSearchParams._reset(this.#search, this.#parts.search);
          },
          enumerable: true,
          configurable: true,
        });
      }
    }
  }

  // ----------------------------------------------------- Blob, File, FormData
  /** The bytes of a Blob part: text (UTF-8), bytes, a buffer, or another Blob. */
  const blobBytes = new SafeWeakMap();
  function partBytes(part) {
    if (typeof part === "string") return encodeText(part);
    if (part instanceof Blob) return WeakMapPrototypeGet(blobBytes, part);
    if (ArrayBufferIsView(part)) return new Uint8ArrayCtor(part.buffer, part.byteOffset, part.byteLength);
    if (part instanceof ArrayBuffer) return new Uint8ArrayCtor(part);
    return encodeText(StringCtor(part));
  }

  class Blob {
    #type;
    constructor(parts = [], options = undefined) {
      const chunks = [];
      let length = 0;
      for (const part of parts) {
        const bytes = partBytes(part);
        ArrayPrototypePush(chunks, bytes);
        length += bytes.length;
      }
      const all = new Uint8ArrayCtor(length);
      let at = 0;
      for (let i = 0; i < chunks.length; i++) {
        all.set(chunks[i], at);
        at += chunks[i].length;
      }
      WeakMapPrototypeSet(blobBytes, this, all);
      this.#type = options && options.type ? StringPrototypeToLowerCase(StringCtor(options.type)) : "";
    }
    get size() { return WeakMapPrototypeGet(blobBytes, this).length; }
    get type() { return this.#type; }
    async text() { return decodeText(WeakMapPrototypeGet(blobBytes, this)); }
    async bytes() { return WeakMapPrototypeGet(blobBytes, this).slice(); }
    async arrayBuffer() { return WeakMapPrototypeGet(blobBytes, this).slice().buffer; }
    slice(start = 0, end = undefined, type = "") {
      return new Blob([WeakMapPrototypeGet(blobBytes, this).subarray(start, end)], { type });
    }
  }

  class File extends Blob {
    #name;
    #lastModified;
    constructor(parts, name, options = undefined) {
      super(parts, options);
      this.#name = StringCtor(name);
      this.#lastModified = options && options.lastModified !== undefined ? +options.lastModified : DateNow();
    }
    get name() { return this.#name; }
    get lastModified() { return this.#lastModified; }
  }

  class FormData {
    #entries = [];
    #value(value, filename) {
      if (value instanceof Blob) return value instanceof File && filename === undefined ? value : new File([value], filename === undefined ? "blob" : filename, { type: value.type });
      return StringCtor(value);
    }
    append(name, value, filename = undefined) { ArrayPrototypePush(this.#entries, [StringCtor(name), this.#value(value, filename)]); }
    set(name, value, filename = undefined) { this.delete(name); this.append(name, value, filename); }
    delete(name) {
      const kept = [];
      for (let i = 0; i < this.#entries.length; i++) if (this.#entries[i][0] !== StringCtor(name)) ArrayPrototypePush(kept, this.#entries[i]);
      this.#entries = kept;
    }
    get(name) {
      return firstValue(this.#entries, name);
    }
    getAll(name) {
      return allValues(this.#entries, name);
    }
    has(name) { return this.get(name) !== null; }
    forEach(callback, thisArg = undefined) {
      for (let i = 0; i < this.#entries.length; i++) ReflectApply(callback, thisArg, [this.#entries[i][1], this.#entries[i][0], this]);
    }
    entries() { return new SafeArrayIterator(ArrayPrototypeSlice(this.#entries)); }
    [primordials.SymbolIterator]() { return this.entries(); }
  }

  // -------------------------------------------------------------------- fetch
  class Headers {
    #pairs;
    constructor(init) {
      const lowered = [];
      const pairs = headerPairs(init);
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
    set(name, value) {
      const wanted = StringPrototypeToLowerCase(StringCtor(name));
      const kept = [];
      for (let i = 0; i < this.#pairs.length; i++) if (this.#pairs[i][0] !== wanted) ArrayPrototypePush(kept, this.#pairs[i]);
      ArrayPrototypePush(kept, [wanted, StringCtor(value)]);
      this.#pairs = kept;
    }
    append(name, value) { ArrayPrototypePush(this.#pairs, [StringPrototypeToLowerCase(StringCtor(name)), StringCtor(value)]); }
    forEach(callback) { for (let i = 0; i < this.#pairs.length; i++) callback(this.#pairs[i][1], this.#pairs[i][0], this); }
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

  class Request {
    #body;
    constructor(input, init = undefined) {
      const from = input instanceof Request ? input : null;
      const options = init || {};
      this.url = from ? from.url : StringCtor(input && typeof input === "object" && "href" in input ? input.href : input);
      this.method = StringPrototypeToUpperCase(StringCtor(options.method || (from ? from.method : "GET")));
      this.headers = new Headers(options.headers || (from ? from.headers : undefined));
      this.signal = options.signal || (from ? from.signal : null);
      this.#body = options.body !== undefined ? options.body : from ? from.#body : null;
      if (this.#body !== null && this.#body !== undefined && typeof this.#body !== "string") {
        throw new TypeErrorCtor("Request: `body` must be a string (use JSON.stringify for JSON)");
      }
    }
    async text() { return this.#body === null || this.#body === undefined ? "" : this.#body; }
    async json() { return JSONParse(await this.text()); }
    /** The request as fetch's options. */
    static _init(request) {
      return { method: request.method, headers: request.headers, body: request.#body, signal: request.signal };
    }
  }

  /** Headers as pairs: an array of pairs, a Headers, or an object. */
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

  /**
   * `fetch` for a plugin: `send(params, signal)` hands the request to the host, which
   * checks it against the plugin's allowlist, and resolves with its answer.
   */
  function makeFetch(name, send) {
    return async function fetch(input, init) {
      const url = input instanceof Request ? input.url : input;
      const options = input instanceof Request ? { ...Request._init(input), ...(init || {}) } : init || {};
      if (options.body !== undefined && options.body !== null && typeof options.body !== "string") {
        throw new TypeErrorCtor(`${name}: \`body\` must be a string (use JSON.stringify for JSON)`);
      }
      const signal = options.signal;
      if (signal && signal.aborted) return PromiseReject(signal.reason);
      const params = {
        url: StringCtor(url && typeof url === "object" && "href" in url ? url.href : url),
        method: StringPrototypeToUpperCase(StringCtor(options.method || "GET")),
        headers: headerPairs(options.headers),
        body: typeof options.body === "string" ? options.body : null,
      };
      return new Response(await send(params, signal));
    };
  }

  return {
    AbortController,
    AbortSignal,
    abortError,
    timerGlobals,
    fireTimers,
    performance,
    TextEncoder,
    TextDecoder,
    URL,
    URLSearchParams,
    Blob,
    File,
    FormData,
    Request,
    Headers,
    Response,
    makeFetch,
  };
})();

export { web };
