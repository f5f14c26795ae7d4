// The web-platform pieces a plugin runtime offers its modules, and npm packages expect:
// `AbortController`/`AbortSignal`, timers, `queueMicrotask`, `TextEncoder`/`TextDecoder`,
// and `fetch` with `Headers` and `Response` (every request goes to the host as
// `host/fetch` and is checked there against the plugin's network allowlist).
//
// Sits inside the plugin runtime's one function of `primordials`, after `common.js` and
// before `plugin.js`, and defines one const, `web`. Timers fire from the event loop:
// `plugin.js` tells Rust the next deadline (`op_plugin_timers`), Rust waits for the
// host's next message no longer than that, and a `timers` delivery runs what is due.
const web = (function () {
  const core = globalThis.Deno.core;
  const { op_plugin_timers: opTimers, op_plugin_log: opLog } = core.ops;
  const encodeText = core.encode;
  const decodeText = core.decode;
  const {
    ArrayBufferIsView,
    ArrayIsArray,
    ArrayPrototypeJoin,
    ArrayPrototypePush,
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
  /** id -> { deadline, callback, args, interval } */
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
      opTimers(next === -1 ? -1 : MathMax(0, next - DateNow()));
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
    MapPrototypeSet(timers, id, { __proto__: null, deadline: DateNow() + delay, callback, args, interval: interval ? delay : -1 });
    announce();
    return id;
  }

  function clear(id) {
    if (MapPrototypeDelete(timers, +id)) announce();
  }

  /** Runs every timer that is due (the `timers` delivery), then announces the next deadline. */
  function fireTimers() {
    const now = DateNow();
    const due = [];
    MapPrototypeForEach(timers, (timer, id) => {
      if (timer.deadline <= now) ArrayPrototypePush(due, id);
    });
    for (let i = 0; i < due.length; i++) {
      const timer = MapPrototypeGet(timers, due[i]);
      if (!timer) continue;
      if (timer.interval >= 0) timer.deadline = now + MathMax(timer.interval, 1);
      else MapPrototypeDelete(timers, due[i]);
      try {
        ReflectApply(timer.callback, undefined, timer.args);
      } catch (e) {
        opLog(3, `a timer callback threw: ${common.describeThrown(e, []).message}`);
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
    return async function fetch(url, init) {
      const options = init || {};
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
    TextEncoder,
    TextDecoder,
    Headers,
    Response,
    makeFetch,
  };
})();
