// Tool schemas in the forms plugin authors write them, turned into what the runtime needs.
//
// A plugin declares a tool's `inputSchema` / `outputSchema` as one of:
//
// - a plain JSON Schema object (draft 2020-12): checked, copied as plain JSON; the host
//   validates values against it, so its parse function is the identity;
// - a zod 4 schema (zod >= 4, or zod 3.25's `zod/v4` and `zod/mini`): zod >= 4.5 classic
//   schemas give their JSON Schema themselves through `~standard.jsonSchema` (Standard
//   JSON Schema); older zod 4 and every `zod/mini` schema have no way to do so from the
//   instance alone (their `z.toJSONSchema` lives on the namespace, which we do not have),
//   so their `_zod.def` tree is converted here, the way zod's own generator does;
// - a zod 3 schema (`_def.typeName`, no `_zod`): zod 3 has no JSON Schema export at all,
//   so its `_def` tree is converted here;
// - any other Standard Schema v1 (valibot, arktype, ...): validated through
//   `~standard.validate`; JSON Schema from `~standard.jsonSchema` when the library
//   implements Standard JSON Schema, else a `toJsonSchema()` / `toJSONSchema()` method.
//
// `schemas.toolSchema(value, where, io)` gives `{ kind, jsonSchema, parse }`: `jsonSchema`
// is plain JSON (no `$schema` noise) for the agent's declarations and the host's
// validation; `parse(value)` resolves to `{ ok: true, value }` (defaults and transforms
// applied) or `{ ok: false, message }` naming each failing field by its path
// (`input.b: Expected number, received string; input.tags[1]: Required`).
// Anything that is not a schema is refused with a TypeError naming the place (`where`).
//
// A module of the bundle step (`build.rs`): imports nothing, exports one object,
// `schemas`, and defines no global: a plugin that replaces `Array.prototype.push`, `JSON` or
// `Object.keys` does not change what it does. The schema libraries' own code (getters,
// `safeParseAsync`, `~standard.validate`) runs as the plugin's code does.

const schemas = (function () {
  const {
    ArrayIsArray,
    ArrayPrototypeJoin,
    ArrayPrototypePush,
    JSONParse,
    JSONStringify,
    MapPrototypeDelete,
    MapPrototypeGet,
    MapPrototypeSet,
    MathAbs,
    Number: NumberCtor,
    NumberIsFinite,
    NumberIsSafeInteger,
    ObjectFreeze,
    ObjectGetOwnPropertySymbols,
    ObjectGetPrototypeOf,
    ObjectKeys,
    ObjectPrototype,
    ReflectApply,
    RegExpPrototypeGetSource,
    SafeMap,
    SafeSet,
    SafeWeakSet,
    SetPrototypeAdd,
    SetPrototypeDelete,
    SetPrototypeForEach,
    SetPrototypeHas,
    String: StringCtor,
    StringPrototypeCharCodeAt,
    StringPrototypeIncludes,
    StringPrototypeSlice,
    StringPrototypeStartsWith,
    SymbolPrototypeToString,
    TypeError: TypeErrorCtor,
    WeakSetPrototypeAdd,
    WeakSetPrototypeHas,
    globalThis: GlobalThis,
  } = primordials;

  /** What a refused value was expected to be. */
  const EXPECTED = "must be a JSON Schema object or a zod / Standard Schema schema";
  /** The JSON Schema dialect asked of libraries; a root `$schema` naming it is dropped. */
  const DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema";
  /** Deepest nesting of a plain JSON Schema object that is read. */
  const MAX_JSON_DEPTH = 256;
  /** Deepest nesting of schema nodes that is converted (a cycle is a `$ref`, not depth). */
  const MAX_SCHEMA_DEPTH = 128;
  /** Most schema nodes one conversion visits (a schema reused everywhere is converted each time). */
  const MAX_SCHEMA_NODES = 20000;
  /** Most issues named in one parse failure message. */
  const MAX_ISSUES = 20;
  /** Longest text kept from a library's message or a thrown value. */
  const MAX_TEXT = 500;
  /** Most unknown keys named in a refusal. */
  const MAX_KEYS_NAMED = 5;

  /** The errors this module throws on purpose, told apart from what a library throws. */
  const OWN_ERRORS = new SafeWeakSet();

  /** A TypeError carrying `message`, marked as this module's own. */
  function refusal(message) {
    const error = new TypeErrorCtor(message);
    WeakSetPrototypeAdd(OWN_ERRORS, error);
    return error;
  }

  /** True for an error made by `refusal`. */
  function isRefusal(value) {
    return typeof value === "object" && value !== null && WeakSetPrototypeHas(OWN_ERRORS, value);
  }

  /** `text` cut to `MAX_TEXT` characters. */
  function cut(text) {
    return text.length <= MAX_TEXT ? text : `${StringPrototypeSlice(text, 0, MAX_TEXT)}…`;
  }

  /** A thrown value as short text, without trusting it. */
  function thrownText(value) {
    try {
      if (typeof value === "string") return cut(value);
      if (typeof value === "object" && value !== null) {
        const message = value.message;
        if (typeof message === "string" && message) return cut(message);
      }
    } catch {
      // A getter threw: say so below.
    }
    return "a value that is not an Error";
  }

  /** True for objects and functions (what can carry properties of a schema). */
  function isObjectLike(value) {
    return (typeof value === "object" && value !== null) || typeof value === "function";
  }

  /** True for an object whose prototype is `Object.prototype` or null (not an array). */
  function isPlainObject(value) {
    if (typeof value !== "object" || value === null || ArrayIsArray(value)) return false;
    const proto = ObjectGetPrototypeOf(value);
    return proto === ObjectPrototype || proto === null;
  }

  /** A value's kind for a refusal: "a string", "an array", "an instance of Foo", ... */
  function describeValue(value) {
    switch (typeof value) {
      case "string": return "a string";
      case "number": return NumberIsFinite(value) ? "a number" : `a number (${StringCtor(value)})`;
      case "boolean": return "a boolean";
      case "bigint": return "a bigint";
      case "symbol": return "a symbol";
      case "undefined": return "undefined";
      case "function": return "a function";
    }
    if (value === null) return "null";
    if (ArrayIsArray(value)) return "an array";
    if (isPlainObject(value)) return "a plain object";
    try {
      const ctor = ObjectGetPrototypeOf(value).constructor;
      const name = typeof ctor === "function" ? ctor.name : undefined;
      if (typeof name === "string" && name && name.length <= 100) return `an instance of ${name}`;
    } catch {
      // No readable constructor name.
    }
    return "an object that is not a plain object";
  }

  /** True when `text` is a JavaScript identifier made of ASCII letters, digits, `_` and `$`. */
  function isIdentifier(text) {
    if (text.length === 0) return false;
    for (let i = 0; i < text.length; i++) {
      const c = StringPrototypeCharCodeAt(text, i);
      const letter = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 36;
      if (!letter && (i === 0 || c < 48 || c > 57)) return false;
    }
    return true;
  }

  /** One step of a data path: `.name`, `["a b"]`, `[3]`. */
  function pathStep(key) {
    if (typeof key === "number") return `[${StringCtor(key)}]`;
    if (typeof key === "symbol") return `[${SymbolPrototypeToString(key)}]`;
    const text = StringCtor(key);
    return isIdentifier(text) ? `.${text}` : `[${JSONStringify(text)}]`;
  }

  /** `text` with the characters a regular expression gives meaning to escaped. */
  function escapeRegExp(text) {
    let out = "";
    for (let i = 0; i < text.length; i++) {
      const c = StringPrototypeCharCodeAt(text, i);
      // \ ^ $ . * + ? ( ) [ ] { } | /
      if (c === 92 || c === 94 || c === 36 || c === 46 || c === 42 || c === 43 || c === 63 ||
          c === 40 || c === 41 || c === 91 || c === 93 || c === 123 || c === 125 || c === 124 || c === 47) {
        out += "\\";
      }
      out += StringPrototypeSlice(text, i, i + 1);
    }
    return out;
  }

  /** The source of a RegExp, or undefined for anything else. */
  function regExpSource(value) {
    try {
      return RegExpPrototypeGetSource(value);
    } catch {
      return undefined;
    }
  }

  // ---------------------------------------------------------------------------------
  // Plain JSON and plain JSON Schema objects
  // ---------------------------------------------------------------------------------

  /**
   * A copy of `value` made of null-prototype objects, arrays and primitives, reading each
   * property once; undefined with `state.problem` set to `{ path, what }` when `value`
   * is not JSON (a function, a symbol, undefined, a class instance, a cycle, ...).
   */
  function copyJson(value, state, path, depth) {
    switch (typeof value) {
      case "string": case "boolean": return value;
      case "number":
        if (NumberIsFinite(value)) return value;
        state.problem = { __proto__: null, path, what: describeValue(value) };
        return undefined;
      case "object":
        if (value === null) return null;
        break;
      default:
        state.problem = { __proto__: null, path, what: describeValue(value) };
        return undefined;
    }
    if (depth >= MAX_JSON_DEPTH) {
      state.problem = { __proto__: null, path, what: `nested more than ${MAX_JSON_DEPTH} levels deep` };
      return undefined;
    }
    if (SetPrototypeHas(state.ancestors, value)) {
      state.problem = { __proto__: null, path, what: "a circular reference" };
      return undefined;
    }
    let copy;
    SetPrototypeAdd(state.ancestors, value);
    if (ArrayIsArray(value)) {
      copy = [];
      const length = value.length;
      for (let i = 0; i < length; i++) {
        const item = copyJson(value[i], state, `${path}[${i}]`, depth + 1);
        if (state.problem !== undefined) break;
        ArrayPrototypePush(copy, item);
      }
    } else if (!isPlainObject(value)) {
      state.problem = { __proto__: null, path, what: describeValue(value) };
    } else if (ObjectGetOwnPropertySymbols(value).length > 0) {
      state.problem = { __proto__: null, path, what: "an object with symbol keys" };
    } else {
      copy = { __proto__: null };
      const keys = ObjectKeys(value);
      for (let i = 0; i < keys.length; i++) {
        const item = copyJson(value[keys[i]], state, `${path}${pathStep(keys[i])}`, depth + 1);
        if (state.problem !== undefined) break;
        copy[keys[i]] = item;
      }
    }
    SetPrototypeDelete(state.ancestors, value);
    return state.problem === undefined ? copy : undefined;
  }

  /** `copyJson` from the top: `{ value }` or `{ problem: { path, what } }`. */
  function readJson(value) {
    const state = { __proto__: null, ancestors: new SafeSet(), problem: undefined };
    const copy = copyJson(value, state, "", 0);
    return { __proto__: null, value: copy, problem: state.problem };
  }

  /**
   * `value` as JSON would carry it (`toJSON` applied, undefined properties dropped), as
   * ordinary objects; undefined when JSON cannot carry it (a function, a bigint, a cycle).
   */
  function jsonValue(value) {
    try {
      const text = JSONStringify(value);
      return typeof text === "string" ? JSONParse(text) : undefined;
    } catch {
      return undefined;
    }
  }

  /** Every keyword of JSON Schema 2020-12 (and the older drafts' names a schema may still use). */
  const KEYWORDS = new SafeSet([
    // core
    "$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment",
    "$defs", "$recursiveRef", "$recursiveAnchor", "definitions", "id",
    // applicator
    "prefixItems", "items", "contains", "additionalProperties", "properties", "patternProperties",
    "dependentSchemas", "propertyNames", "if", "then", "else", "allOf", "anyOf", "oneOf", "not",
    "additionalItems", "dependencies",
    // unevaluated
    "unevaluatedItems", "unevaluatedProperties",
    // validation
    "type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains",
    "minContains", "maxProperties", "minProperties", "required", "dependentRequired",
    // format, content, meta-data
    "format", "contentEncoding", "contentMediaType", "contentSchema",
    "title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
  ]);
  /** Keywords whose value is an object of schemas. */
  const SCHEMA_MAP_KEYWORDS = new SafeSet(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);
  /** Keywords whose value is one schema. */
  const SCHEMA_KEYWORDS = new SafeSet([
    "additionalProperties", "propertyNames", "contains", "if", "then", "else", "not",
    "unevaluatedItems", "unevaluatedProperties", "contentSchema", "additionalItems",
  ]);
  /** Keywords whose value is a non-empty list of schemas. */
  const SCHEMA_LIST_KEYWORDS = new SafeSet(["prefixItems", "allOf", "anyOf", "oneOf"]);
  /** The names `type` may use. */
  const TYPE_NAMES = new SafeSet(["array", "boolean", "integer", "null", "number", "object", "string"]);

  /** The keys of `node` that are neither keywords nor `x-` extensions. */
  function unknownKeys(node) {
    const unknown = [];
    const keys = ObjectKeys(node);
    for (let i = 0; i < keys.length; i++) {
      if (!SetPrototypeHas(KEYWORDS, keys[i]) && !StringPrototypeStartsWith(keys[i], "x-")) {
        ArrayPrototypePush(unknown, keys[i]);
      }
    }
    return unknown;
  }

  /** `keys` as text for a message: `foo, bar` (at most `MAX_KEYS_NAMED`). */
  function keyList(keys) {
    const shown = [];
    for (let i = 0; i < keys.length && i < MAX_KEYS_NAMED; i++) ArrayPrototypePush(shown, JSONStringify(keys[i]));
    const more = keys.length > MAX_KEYS_NAMED ? `, and ${keys.length - MAX_KEYS_NAMED} more` : "";
    return `${ArrayPrototypeJoin(shown, ", ")}${more}`;
  }

  /** Why the copied subschema `node` at `place` is not a JSON Schema, or undefined. */
  function schemaProblem(node, place, depth) {
    if (typeof node === "boolean") return undefined;
    if (typeof node !== "object" || node === null || ArrayIsArray(node)) {
      return `${place} must be a JSON Schema (an object or a boolean); got ${describeValue(node)}`;
    }
    if (depth >= MAX_JSON_DEPTH) return `${place} is nested more than ${MAX_JSON_DEPTH} levels deep`;
    const unknown = unknownKeys(node);
    if (unknown.length > 0) return `${place} has keys that are not JSON Schema keywords (${keyList(unknown)})`;
    const keys = ObjectKeys(node);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const value = node[key];
      const at = `${place}${pathStep(key)}`;
      let problem;
      if (SetPrototypeHas(SCHEMA_KEYWORDS, key)) {
        problem = schemaProblem(value, at, depth + 1);
      } else if (SetPrototypeHas(SCHEMA_MAP_KEYWORDS, key)) {
        if (!isPlainObject(value)) return `${at} must be an object of JSON Schemas; got ${describeValue(value)}`;
        const names = ObjectKeys(value);
        for (let j = 0; j < names.length && problem === undefined; j++) {
          problem = schemaProblem(value[names[j]], `${at}${pathStep(names[j])}`, depth + 1);
        }
      } else if (SetPrototypeHas(SCHEMA_LIST_KEYWORDS, key) || (key === "items" && ArrayIsArray(value))) {
        if (!ArrayIsArray(value) || value.length === 0) {
          return `${at} must be a non-empty array of JSON Schemas; got ${describeValue(value)}`;
        }
        for (let j = 0; j < value.length && problem === undefined; j++) {
          problem = schemaProblem(value[j], `${at}[${j}]`, depth + 1);
        }
      } else if (key === "items") {
        problem = schemaProblem(value, at, depth + 1);
      } else if (key === "dependencies") {
        if (!isPlainObject(value)) return `${at} must be an object; got ${describeValue(value)}`;
        const names = ObjectKeys(value);
        for (let j = 0; j < names.length && problem === undefined; j++) {
          if (!ArrayIsArray(value[names[j]])) problem = schemaProblem(value[names[j]], `${at}${pathStep(names[j])}`, depth + 1);
        }
      } else if (key === "type") {
        problem = typeProblem(value, at);
      } else if (key === "required") {
        if (!ArrayIsArray(value)) return `${at} must be an array of property names; got ${describeValue(value)}`;
        for (let j = 0; j < value.length; j++) {
          if (typeof value[j] !== "string") return `${at}[${j}] must be a property name (a string); got ${describeValue(value[j])}`;
        }
      } else if (key === "enum") {
        if (!ArrayIsArray(value)) return `${at} must be an array; got ${describeValue(value)}`;
      }
      if (problem !== undefined) return problem;
    }
    return undefined;
  }

  /** Why `value` is not a valid `type` keyword, or undefined. */
  function typeProblem(value, at) {
    const names = "a JSON Schema type name (array, boolean, integer, null, number, object, string) or a list of them";
    if (typeof value === "string") {
      return SetPrototypeHas(TYPE_NAMES, value) ? undefined : `${at} must be ${names}; got ${JSONStringify(value)}`;
    }
    if (!ArrayIsArray(value) || value.length === 0) return `${at} must be ${names}; got ${describeValue(value)}`;
    for (let i = 0; i < value.length; i++) {
      if (typeof value[i] !== "string" || !SetPrototypeHas(TYPE_NAMES, value[i])) {
        return `${at} must be ${names}; got ${typeof value[i] === "string" ? JSONStringify(value[i]) : describeValue(value[i])} in the list`;
      }
    }
    return undefined;
  }

  /**
   * Reads a plain JSON Schema object: `{ jsonSchema }` (a plain JSON copy), or
   * `{ message }` saying, with `where`, why `value` is not one.
   */
  function readJsonSchema(value, where) {
    const read = readJson(value);
    if (read.problem !== undefined) {
      return { __proto__: null, jsonSchema: undefined, message: `${where} ${EXPECTED}; got an object that is not JSON (${read.problem.path} is ${read.problem.what})` };
    }
    const unknown = unknownKeys(read.value);
    if (unknown.length > 0) {
      return { __proto__: null, jsonSchema: undefined, message: `${where} ${EXPECTED}; got an object whose keys are not JSON Schema keywords (${keyList(unknown)})` };
    }
    const problem = schemaProblem(read.value, where, 0);
    if (problem !== undefined) return { __proto__: null, jsonSchema: undefined, message: problem };
    return { __proto__: null, jsonSchema: JSONParse(JSONStringify(read.value)), message: undefined };
  }

  /**
   * A library's JSON Schema as plain JSON: a copy, without a root `$schema` naming draft
   * 2020-12 (what was asked for). Refused when it is not JSON.
   */
  function libraryJson(raw, where, library) {
    if (raw === true) return {};
    if (raw === false) return { not: {} };
    const json = jsonValue(raw);
    if (!isPlainObject(json)) {
      throw refusal(`${where}: what ${library} gave as JSON Schema is not a JSON object (it is ${describeValue(raw)})`);
    }
    if (json.$schema === DRAFT_2020_12) delete json.$schema;
    return json;
  }

  // ---------------------------------------------------------------------------------
  // Converting schema trees (zod 3's `_def`, zod 4's `_zod.def`)
  // ---------------------------------------------------------------------------------

  /** A null-prototype JSON Schema node (dynamic keys such as `__proto__` stay own data). */
  function node(type) {
    const json = { __proto__: null };
    if (type !== undefined) json.type = type;
    return json;
  }

  /**
   * Converts `schema` with `state.convert`, turning recursion into `$ref`s: a node met
   * again while it is being converted is referenced (`#` for the root, else
   * `#/$defs/__schemaN`) and its JSON moves to `$defs`.
   */
  function visit(state, schema, path) {
    if (!isObjectLike(schema)) throw refusal(`${state.where}${path}: ${describeValue(schema)} is not a ${state.library} schema`);
    const active = MapPrototypeGet(state.stack, schema);
    if (active !== undefined) {
      if (active.root) return { __proto__: null, $ref: "#" };
      if (active.name === undefined) active.name = `__schema${state.defCount++}`;
      return { __proto__: null, $ref: `#/$defs/${active.name}` };
    }
    if (++state.nodes > MAX_SCHEMA_NODES) throw refusal(`${state.where}: the ${state.library} schema has more than ${MAX_SCHEMA_NODES} nodes`);
    if (state.depth >= MAX_SCHEMA_DEPTH) throw refusal(`${state.where}${path}: the ${state.library} schema is nested more than ${MAX_SCHEMA_DEPTH} levels deep`);
    const entry = { __proto__: null, root: state.depth === 0, name: undefined };
    MapPrototypeSet(state.stack, schema, entry);
    state.depth++;
    let json;
    try {
      json = state.convert(state, schema, path);
    } finally {
      state.depth--;
      MapPrototypeDelete(state.stack, schema);
    }
    if (entry.name === undefined) return json;
    state.defs[entry.name] = json;
    state.hasDefs = true;
    return { __proto__: null, $ref: `#/$defs/${entry.name}` };
  }

  /** A fresh conversion state. */
  function walkState(where, io, library, convert) {
    return {
      __proto__: null, where, io, library, convert,
      stack: new SafeMap(), defs: { __proto__: null }, hasDefs: false, defCount: 0, nodes: 0, depth: 0,
    };
  }

  /** Keys a root that only points into `$defs` may carry besides `$ref` and still be inlined. */
  const ANNOTATION_KEYS = new SafeSet(["description", "title", "default", "examples", "deprecated", "readOnly", "writeOnly"]);

  /** Replaces every `$ref: from` in `json` by `$ref: to`. */
  function replaceRef(json, from, to) {
    if (typeof json !== "object" || json === null) return;
    if (ArrayIsArray(json)) {
      for (let i = 0; i < json.length; i++) replaceRef(json[i], from, to);
      return;
    }
    const keys = ObjectKeys(json);
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] === "$ref" && json.$ref === from) json.$ref = to;
      else replaceRef(json[keys[i]], from, to);
    }
  }

  /** The converted root with `$defs`, as plain JSON. */
  function finishWalk(state, root) {
    // A root that is only a reference (a recursive schema under a refine or a lazy) is
    // inlined, so an input schema stays `type: "object"` at the top: its references become `#`.
    const ref = root.$ref;
    if (typeof ref === "string" && StringPrototypeStartsWith(ref, "#/$defs/")) {
      const name = StringPrototypeSlice(ref, 8);
      const body = state.defs[name];
      const keys = ObjectKeys(root);
      let plain = typeof body === "object" && body !== null && body.$ref === undefined;
      for (let i = 0; i < keys.length && plain; i++) {
        if (keys[i] !== "$ref" && !SetPrototypeHas(ANNOTATION_KEYS, keys[i])) plain = false;
      }
      if (plain) {
        delete state.defs[name];
        const merged = { __proto__: null };
        const bodyKeys = ObjectKeys(body);
        for (let i = 0; i < bodyKeys.length; i++) merged[bodyKeys[i]] = body[bodyKeys[i]];
        for (let i = 0; i < keys.length; i++) if (keys[i] !== "$ref") merged[keys[i]] = root[keys[i]];
        root = merged;
        replaceRef(root, ref, "#");
        replaceRef(state.defs, ref, "#");
      }
    }
    if (state.hasDefs && ObjectKeys(state.defs).length > 0) root.$defs = state.defs;
    return JSONParse(JSONStringify(root));
  }

  /** Folds `anyOf` members that are each only `{ type }` into one `type` list (as zod 4.6 does). */
  function compactTypeUnion(json) {
    const options = json.anyOf;
    if (!ArrayIsArray(options) || options.length === 0 || json.type !== undefined) return json;
    const types = [];
    for (let i = 0; i < options.length; i++) {
      const option = options[i];
      if (typeof option !== "object" || option === null) return json;
      const keys = ObjectKeys(option);
      if (keys.length !== 1 || keys[0] !== "type") return json;
      const list = ArrayIsArray(option.type) ? option.type : [option.type];
      for (let j = 0; j < list.length; j++) {
        if (typeof list[j] !== "string") return json;
        let seen = false;
        for (let k = 0; k < types.length; k++) if (types[k] === list[j]) seen = true;
        if (!seen) ArrayPrototypePush(types, list[j]);
      }
    }
    delete json.anyOf;
    json.type = types.length === 1 ? types[0] : types;
    return json;
  }

  /** `{ anyOf: [inner, { type: "null" }] }`, compacted. */
  function nullable(inner) {
    const json = node();
    json.anyOf = [inner, node("null")];
    return compactTypeUnion(json);
  }

  /** The keywords `foldObjects` knows how to combine (as zod 4.6's generator). */
  const FOLDABLE_KEYS = new SafeSet(["type", "properties", "required", "additionalProperties"]);

  /** What an object member demands of keys it does not declare (its catchall), or undefined. */
  function undeclaredConstraint(member) {
    const extra = member.additionalProperties;
    if (typeof extra !== "object" || extra === null || ObjectKeys(extra).length === 0) return undefined;
    return extra;
  }

  /**
   * The one object schema that object members describe together, or undefined when a
   * member is not a plain object schema. An `allOf` of closed objects would reject each
   * other's keys, where zod's intersection pools them: folding keeps zod's meaning.
   */
  function foldObjects(members) {
    for (let i = 0; i < members.length; i++) {
      const member = members[i];
      if (typeof member !== "object" || member === null || member.type !== "object") return undefined;
      const keys = ObjectKeys(member);
      for (let j = 0; j < keys.length; j++) if (!SetPrototypeHas(FOLDABLE_KEYS, keys[j])) return undefined;
    }
    const properties = { __proto__: null };
    const done = new SafeSet();
    const required = [];
    const requiredSeen = new SafeSet();
    for (let i = 0; i < members.length; i++) {
      const declared = members[i].properties;
      const names = typeof declared === "object" && declared !== null ? ObjectKeys(declared) : [];
      for (let j = 0; j < names.length; j++) {
        const name = names[j];
        if (SetPrototypeHas(done, name)) continue;
        SetPrototypeAdd(done, name);
        const parts = [];
        const texts = new SafeSet();
        for (let k = 0; k < members.length; k++) {
          const own = members[k].properties;
          let part = typeof own === "object" && own !== null && name in own ? own[name] : undefined;
          if (part === undefined) part = undeclaredConstraint(members[k]);
          if (part === undefined) continue;
          const text = JSONStringify(part);
          if (SetPrototypeHas(texts, text)) continue;
          SetPrototypeAdd(texts, text);
          ArrayPrototypePush(parts, part);
        }
        let merged = parts.length === 1 ? parts[0] : foldObjects(parts);
        if (merged === undefined) {
          merged = node();
          merged.allOf = parts;
        }
        properties[name] = merged;
      }
      const list = ArrayIsArray(members[i].required) ? members[i].required : [];
      for (let j = 0; j < list.length; j++) {
        if (!SetPrototypeHas(requiredSeen, list[j])) {
          SetPrototypeAdd(requiredSeen, list[j]);
          ArrayPrototypePush(required, list[j]);
        }
      }
    }
    const folded = node("object");
    folded.properties = properties;
    if (required.length > 0) folded.required = required;
    let closed = true;
    const constraints = [];
    const texts = new SafeSet();
    for (let i = 0; i < members.length; i++) {
      if (members[i].additionalProperties !== false) closed = false;
      const constraint = undeclaredConstraint(members[i]);
      if (constraint !== undefined && !SetPrototypeHas(texts, JSONStringify(constraint))) {
        SetPrototypeAdd(texts, JSONStringify(constraint));
        ArrayPrototypePush(constraints, constraint);
      }
    }
    if (closed) {
      folded.additionalProperties = false;
    } else if (constraints.length === 1) {
      folded.additionalProperties = constraints[0];
    } else if (constraints.length > 1) {
      folded.additionalProperties = node();
      folded.additionalProperties.allOf = constraints;
    }
    return folded;
  }

  /** The intersection of `a` and `b`: one folded object schema, else `{ allOf }` (nested `allOf`s spread). */
  function intersection(a, b) {
    const all = [];
    const members = [a, b];
    for (let i = 0; i < 2; i++) {
      const member = members[i];
      if (ObjectKeys(member).length === 1 && ArrayIsArray(member.allOf)) {
        for (let j = 0; j < member.allOf.length; j++) ArrayPrototypePush(all, member.allOf[j]);
      } else {
        ArrayPrototypePush(all, member);
      }
    }
    const folded = foldObjects(all);
    if (folded !== undefined) return folded;
    const json = node();
    json.allOf = all;
    return json;
  }

  /** The larger of a bound so far and a new one (a non-finite new one is ignored). */
  function larger(current, value) {
    if (typeof value !== "number" || !NumberIsFinite(value)) return current;
    return current === undefined || value > current ? value : current;
  }

  /** The smaller of a bound so far and a new one. */
  function smaller(current, value) {
    if (typeof value !== "number" || !NumberIsFinite(value)) return current;
    return current === undefined || value < current ? value : current;
  }

  /** A bigint bound as a number, or undefined when it is not a safe integer. */
  function bigintBound(value) {
    if (typeof value !== "bigint") return undefined;
    const n = NumberCtor(value);
    return NumberIsSafeInteger(n) ? n : undefined;
  }

  /** Adds `divisor` to `list` unless it is there, zero or not finite. */
  function addDivisor(list, divisor) {
    if (typeof divisor !== "number" || !NumberIsFinite(divisor) || divisor === 0) return;
    const d = MathAbs(divisor);
    for (let i = 0; i < list.length; i++) if (list[i] === d) return;
    ArrayPrototypePush(list, d);
  }

  /** Writes numeric bounds: the tighter of `minimum` / `exclusiveMinimum` (and maximum) wins. */
  function writeNumberBounds(json, b) {
    if (b.exMin !== undefined && (b.min === undefined || b.exMin >= b.min)) json.exclusiveMinimum = b.exMin;
    else if (b.min !== undefined) json.minimum = b.min;
    if (b.exMax !== undefined && (b.max === undefined || b.exMax <= b.max)) json.exclusiveMaximum = b.exMax;
    else if (b.max !== undefined) json.maximum = b.max;
    if (b.divisors.length > 0) {
      json.multipleOf = b.divisors[0];
      for (let i = 1; i < b.divisors.length; i++) addAllOf(json, "multipleOf", b.divisors[i]);
    }
  }

  /** Appends `{ [key]: value }` to `json.allOf`. */
  function addAllOf(json, key, value) {
    if (!ArrayIsArray(json.allOf)) json.allOf = [];
    const member = node();
    member[key] = value;
    ArrayPrototypePush(json.allOf, member);
  }

  /** Writes string `formats` and `patterns`: the first of each as a keyword, the rest in `allOf`. */
  function writeFormatsAndPatterns(json, formats, patterns) {
    if (formats.length > 0) json.format = formats[0];
    for (let i = 1; i < formats.length; i++) if (formats[i] !== formats[0]) addAllOf(json, "format", formats[i]);
    if (patterns.length === 1) json.pattern = patterns[0];
    else for (let i = 0; i < patterns.length; i++) addAllOf(json, "pattern", patterns[i]);
  }

  /** A default value as JSON, or undefined (then no `default` is written). */
  function defaultJson(value) {
    return value === undefined ? undefined : jsonValue(value);
  }

  // ---------------------------------------------------------------------------------
  // zod 3
  // ---------------------------------------------------------------------------------

  /** zod 3's `time()` pattern source (the one zod 3 matches with). */
  function zod3TimeSource(precision) {
    let seconds = "[0-5]\\d";
    if (typeof precision === "number" && precision > 0) seconds = `${seconds}\\.\\d{${precision}}`;
    else if (precision === null || precision === undefined) seconds = `${seconds}(\\.\\d+)?`;
    const quantifier = typeof precision === "number" && precision > 0 ? "" : "?";
    return `([01]\\d|2[0-3]):[0-5]\\d(:${seconds})${quantifier}`;
  }

  /** zod 3's patterns for ids it checks (without their `i` flag, spelled out). */
  const ZOD3_ID_PATTERNS = {
    __proto__: null,
    cuid: "^[cC][^\\s-]{8,}$",
    cuid2: "^[0-9a-z]+$",
    ulid: "^[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}$",
    nanoid: "^[a-zA-Z0-9_-]{21}$",
  };

  /** A zod 3 ZodString's JSON Schema. */
  function zod3String(def) {
    const json = node("string");
    const formats = [];
    const patterns = [];
    let minLength, maxLength, anyIp = false;
    const checks = ArrayIsArray(def.checks) ? def.checks : [];
    for (let i = 0; i < checks.length; i++) {
      const check = checks[i];
      if (!isObjectLike(check)) continue;
      const value = check.value;
      switch (check.kind) {
        case "min": minLength = larger(minLength, value); break;
        case "max": maxLength = smaller(maxLength, value); break;
        case "length": minLength = larger(minLength, value); maxLength = smaller(maxLength, value); break;
        case "email": ArrayPrototypePush(formats, "email"); break;
        case "url": ArrayPrototypePush(formats, "uri"); break;
        case "uuid": ArrayPrototypePush(formats, "uuid"); break;
        case "duration": ArrayPrototypePush(formats, "duration"); break;
        case "date": ArrayPrototypePush(formats, "date"); break;
        // `local` date-times have no offset, which the `date-time` format requires.
        case "datetime": if (!check.local) ArrayPrototypePush(formats, "date-time"); break;
        // zod 3's times have no offset (and may omit seconds): a pattern, not the `time` format.
        case "time": ArrayPrototypePush(patterns, `^${zod3TimeSource(check.precision)}$`); break;
        case "ip":
          if (check.version === "v4") ArrayPrototypePush(formats, "ipv4");
          else if (check.version === "v6") ArrayPrototypePush(formats, "ipv6");
          else anyIp = true;
          break;
        case "cuid": case "cuid2": case "ulid": case "nanoid":
          ArrayPrototypePush(patterns, ZOD3_ID_PATTERNS[check.kind]);
          break;
        case "regex": {
          const source = regExpSource(check.regex);
          if (source !== undefined) ArrayPrototypePush(patterns, source);
          break;
        }
        case "startsWith":
          if (typeof value === "string") ArrayPrototypePush(patterns, `^${escapeRegExp(value)}`);
          break;
        case "endsWith":
          if (typeof value === "string") ArrayPrototypePush(patterns, `${escapeRegExp(value)}$`);
          break;
        case "includes":
          if (typeof value === "string") {
            const at = check.position;
            ArrayPrototypePush(patterns, typeof at === "number" && at > 0 && NumberIsSafeInteger(at)
              ? `^[\\s\\S]{${at}}[\\s\\S]*${escapeRegExp(value)}`
              : escapeRegExp(value));
          }
          break;
        case "base64": json.contentEncoding = "base64"; break;
        case "base64url": json.contentEncoding = "base64url"; break;
        // trim, toLowerCase, toUpperCase change the value; emoji, cidr, jwt have no keyword.
      }
    }
    if (minLength !== undefined) json.minLength = minLength;
    if (maxLength !== undefined) json.maxLength = maxLength;
    writeFormatsAndPatterns(json, formats, patterns);
    if (anyIp) {
      const v4 = node(), v6 = node();
      v4.format = "ipv4";
      v6.format = "ipv6";
      json.anyOf = [v4, v6];
    }
    return json;
  }

  /** A zod 3 ZodNumber's JSON Schema. */
  function zod3Number(def) {
    const b = { __proto__: null, min: undefined, exMin: undefined, max: undefined, exMax: undefined, divisors: [] };
    let isInt = false;
    const checks = ArrayIsArray(def.checks) ? def.checks : [];
    for (let i = 0; i < checks.length; i++) {
      const check = checks[i];
      if (!isObjectLike(check)) continue;
      switch (check.kind) {
        case "int": isInt = true; break;
        case "min": if (check.inclusive) b.min = larger(b.min, check.value); else b.exMin = larger(b.exMin, check.value); break;
        case "max": if (check.inclusive) b.max = smaller(b.max, check.value); else b.exMax = smaller(b.exMax, check.value); break;
        case "multipleOf": addDivisor(b.divisors, check.value); break;
        // finite: JSON numbers are finite.
      }
    }
    const json = node(isInt ? "integer" : "number");
    writeNumberBounds(json, b);
    return json;
  }

  /** A zod 3 ZodBigInt's JSON Schema: an int64 integer (bounds that fit a double kept). */
  function zod3BigInt(def) {
    const b = { __proto__: null, min: undefined, exMin: undefined, max: undefined, exMax: undefined, divisors: [] };
    const checks = ArrayIsArray(def.checks) ? def.checks : [];
    for (let i = 0; i < checks.length; i++) {
      const check = checks[i];
      if (!isObjectLike(check)) continue;
      const value = bigintBound(check.value);
      switch (check.kind) {
        case "min": if (check.inclusive) b.min = larger(b.min, value); else b.exMin = larger(b.exMin, value); break;
        case "max": if (check.inclusive) b.max = smaller(b.max, value); else b.exMax = smaller(b.exMax, value); break;
        case "multipleOf": addDivisor(b.divisors, value); break;
      }
    }
    const json = node("integer");
    json.format = "int64";
    writeNumberBounds(json, b);
    return json;
  }

  /** `{ type, const }` for a literal value, or undefined when JSON has no such value. */
  function literalJson(value) {
    let json;
    if (value === null) {
      json = node("null");
      json.const = null;
    } else if (typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && NumberIsFinite(value))) {
      json = node(typeof value);
      json.const = value;
    } else if (typeof value === "bigint" && bigintBound(value) !== undefined) {
      json = node("integer");
      json.const = bigintBound(value);
    }
    return json;
  }

  /** `{ type?, enum }` for a list of enum values (a type when they share one). */
  function enumJson(values) {
    const json = node();
    let strings = true, numbers = true;
    for (let i = 0; i < values.length; i++) {
      if (typeof values[i] !== "string") strings = false;
      if (typeof values[i] !== "number") numbers = false;
    }
    if (values.length === 0) {
      json.not = node();
      return json;
    }
    if (strings) json.type = "string";
    else if (numbers) json.type = "number";
    json.enum = values;
    return json;
  }

  /** True when a zod 3 schema lets its object key be absent (for `io`). */
  function zod3Optional(schema, io, seen) {
    if (!isObjectLike(schema) || !isObjectLike(schema._def)) return false;
    const def = schema._def;
    switch (def.typeName) {
      case "ZodOptional": case "ZodUndefined": case "ZodVoid": case "ZodAny": case "ZodUnknown":
        return true;
      case "ZodDefault":
        return io === "input";
      case "ZodNullable": case "ZodReadonly": case "ZodCatch":
        return zod3Optional(def.innerType, io, seen);
      case "ZodBranded":
        return zod3Optional(def.type, io, seen);
      case "ZodEffects":
        if (io === "output" && isObjectLike(def.effect) && def.effect.type === "transform") return false;
        return zod3Optional(def.schema, io, seen);
      case "ZodPipeline":
        return zod3Optional(io === "input" ? def.in : def.out, io, seen);
      case "ZodLazy": {
        if (SetPrototypeHas(seen, schema) || typeof def.getter !== "function") return false;
        SetPrototypeAdd(seen, schema);
        return zod3Optional(ReflectApply(def.getter, def, []), io, seen);
      }
      case "ZodUnion": case "ZodDiscriminatedUnion": {
        const options = def.options;
        if (!ArrayIsArray(options)) return false;
        for (let i = 0; i < options.length; i++) if (zod3Optional(options[i], io, seen)) return true;
        return false;
      }
    }
    return false;
  }

  /** zod 3 types that stand for "absent" and drop out of a union. */
  function isZod3Absent(schema) {
    const typeName = isObjectLike(schema) && isObjectLike(schema._def) ? schema._def.typeName : undefined;
    return typeName === "ZodUndefined" || typeName === "ZodVoid";
  }

  /** Converts one zod 3 schema node (see `visit`). */
  function zod3Convert(state, schema, path) {
    const def = schema._def;
    if (!isObjectLike(def) || typeof def.typeName !== "string") {
      throw refusal(`${state.where}${path}: ${describeValue(schema)} is not a zod schema`);
    }
    const typeName = def.typeName;
    const io = state.io;
    const noJson = () => refusal(`${state.where}${path}: a zod ${cut(typeName)} has no JSON Schema`);
    let json;
    switch (typeName) {
      case "ZodString": json = zod3String(def); break;
      case "ZodNumber": json = zod3Number(def); break;
      case "ZodBigInt": json = zod3BigInt(def); break;
      case "ZodBoolean": json = node("boolean"); break;
      case "ZodDate": json = node("string"); json.format = "date-time"; break;
      case "ZodNull": json = node("null"); break;
      case "ZodAny": case "ZodUnknown": json = node(); break;
      case "ZodLiteral":
        json = literalJson(def.value);
        if (json === undefined) throw refusal(`${state.where}${path}: a zod ZodLiteral of ${describeValue(def.value)} has no JSON Schema`);
        break;
      case "ZodEnum": {
        const values = [];
        const list = ArrayIsArray(def.values) ? def.values : [];
        for (let i = 0; i < list.length; i++) if (typeof list[i] === "string") ArrayPrototypePush(values, list[i]);
        json = enumJson(values);
        break;
      }
      case "ZodNativeEnum": {
        // A numeric TypeScript enum maps each value back to its name: those keys are not members.
        const object = def.values;
        const values = [];
        const keys = isObjectLike(object) ? ObjectKeys(object) : [];
        for (let i = 0; i < keys.length; i++) {
          const value = object[keys[i]];
          if (typeof object[value] === "number") continue;
          if (typeof value === "string" || (typeof value === "number" && NumberIsFinite(value))) ArrayPrototypePush(values, value);
        }
        json = enumJson(values);
        break;
      }
      case "ZodArray": {
        json = node("array");
        json.items = visit(state, def.type, `${path}[]`);
        let min, max;
        if (isObjectLike(def.minLength)) min = larger(min, def.minLength.value);
        if (isObjectLike(def.maxLength)) max = smaller(max, def.maxLength.value);
        if (isObjectLike(def.exactLength)) { min = larger(min, def.exactLength.value); max = smaller(max, def.exactLength.value); }
        if (min !== undefined) json.minItems = min;
        if (max !== undefined) json.maxItems = max;
        break;
      }
      case "ZodTuple": {
        json = node("array");
        const items = ArrayIsArray(def.items) ? def.items : [];
        const prefix = [];
        for (let i = 0; i < items.length; i++) ArrayPrototypePush(prefix, visit(state, items[i], `${path}[${i}]`));
        if (prefix.length > 0) json.prefixItems = prefix;
        if (def.rest !== null && def.rest !== undefined) {
          json.items = visit(state, def.rest, `${path}[]`);
        } else {
          json.items = false;
          json.maxItems = items.length;
        }
        if (items.length > 0) json.minItems = items.length;
        break;
      }
      case "ZodObject": {
        const shape = typeof def.shape === "function" ? ReflectApply(def.shape, def, []) : def.shape;
        if (!isObjectLike(shape)) throw refusal(`${state.where}${path}: a zod ZodObject without a shape has no JSON Schema`);
        json = node("object");
        const properties = { __proto__: null };
        const required = [];
        const keys = ObjectKeys(shape);
        for (let i = 0; i < keys.length; i++) {
          const field = shape[keys[i]];
          properties[keys[i]] = visit(state, field, `${path}${pathStep(keys[i])}`);
          if (!zod3Optional(field, io, new SafeSet())) ArrayPrototypePush(required, keys[i]);
        }
        json.properties = properties;
        if (required.length > 0) json.required = required;
        const catchall = def.catchall;
        const catchallName = isObjectLike(catchall) && isObjectLike(catchall._def) ? catchall._def.typeName : undefined;
        if (catchallName !== undefined && catchallName !== "ZodNever") {
          json.additionalProperties = visit(state, catchall, `${path}[*]`);
        } else if (def.unknownKeys === "strict" || (def.unknownKeys !== "passthrough" && io === "output")) {
          // strip drops unknown keys: what comes out has none.
          json.additionalProperties = false;
        }
        break;
      }
      case "ZodUnion": case "ZodDiscriminatedUnion": {
        const options = def.options;
        if (!ArrayIsArray(options)) throw noJson();
        const members = [];
        for (let i = 0; i < options.length; i++) {
          if (!isZod3Absent(options[i])) ArrayPrototypePush(members, visit(state, options[i], path));
        }
        if (members.length === 0) throw noJson();
        if (members.length === 1) {
          json = members[0];
        } else {
          json = node();
          json.anyOf = members;
          compactTypeUnion(json);
        }
        break;
      }
      case "ZodIntersection":
        json = intersection(visit(state, def.left, path), visit(state, def.right, path));
        break;
      case "ZodRecord": {
        json = node("object");
        const key = visit(state, def.keyType, `${path}{key}`);
        const keyKeys = ObjectKeys(key);
        if (!(keyKeys.length === 1 && key.type === "string")) json.propertyNames = key;
        json.additionalProperties = visit(state, def.valueType, `${path}[*]`);
        break;
      }
      case "ZodMap": {
        // Entries as [key, value] pairs, the way a Map is spread.
        const pair = node("array");
        pair.prefixItems = [visit(state, def.keyType, `${path}{key}`), visit(state, def.valueType, `${path}{value}`)];
        pair.items = false;
        pair.minItems = 2;
        pair.maxItems = 2;
        json = node("array");
        json.items = pair;
        break;
      }
      case "ZodSet": {
        json = node("array");
        json.uniqueItems = true;
        json.items = visit(state, def.valueType, `${path}[]`);
        if (isObjectLike(def.minSize) && larger(undefined, def.minSize.value) !== undefined) json.minItems = def.minSize.value;
        if (isObjectLike(def.maxSize) && larger(undefined, def.maxSize.value) !== undefined) json.maxItems = def.maxSize.value;
        break;
      }
      case "ZodOptional":
        json = visit(state, def.innerType, path);
        break;
      case "ZodNullable":
        json = nullable(visit(state, def.innerType, path));
        break;
      case "ZodDefault": {
        json = visit(state, def.innerType, path);
        let value;
        try {
          value = typeof def.defaultValue === "function" ? defaultJson(ReflectApply(def.defaultValue, def, [])) : undefined;
        } catch {
          value = undefined;
        }
        if (value !== undefined) json.default = value;
        break;
      }
      case "ZodCatch": {
        json = visit(state, def.innerType, path);
        let value;
        try {
          value = typeof def.catchValue === "function"
            ? defaultJson(ReflectApply(def.catchValue, def, [{ __proto__: null, error: undefined, input: undefined }]))
            : undefined;
        } catch {
          value = undefined;
        }
        if (value !== undefined) json.default = value;
        break;
      }
      case "ZodBranded":
        json = visit(state, def.type, path);
        break;
      case "ZodReadonly":
        json = visit(state, def.innerType, path);
        json.readOnly = true;
        break;
      case "ZodEffects": {
        // refine / superRefine / preprocess keep the inner schema's shape; a transform's output is unknown.
        const effect = isObjectLike(def.effect) ? def.effect.type : undefined;
        json = io === "output" && effect === "transform" ? node() : visit(state, def.schema, path);
        break;
      }
      case "ZodPipeline":
        json = visit(state, io === "input" ? def.in : def.out, path);
        break;
      case "ZodLazy":
        if (typeof def.getter !== "function") throw noJson();
        json = visit(state, ReflectApply(def.getter, def, []), path);
        break;
      default:
        // ZodFunction, ZodPromise, ZodSymbol, ZodUndefined, ZodVoid, ZodNever, ZodNaN, ...
        throw noJson();
    }
    if (typeof def.description === "string") json.description = def.description;
    return json;
  }

  // ---------------------------------------------------------------------------------
  // zod 4
  // ---------------------------------------------------------------------------------

  /** The bounds zod 4's number formats imply. */
  const ZOD4_NUMBER_RANGES = {
    __proto__: null,
    safeint: [-9007199254740991, 9007199254740991],
    int32: [-2147483648, 2147483647],
    uint32: [0, 4294967295],
    float32: [-3.4028234663852886e38, 3.4028234663852886e38],
    float64: [-1.7976931348623157e308, 1.7976931348623157e308],
  };

  /** zod 4 format names that JSON Schema spells differently ("" : none). */
  const ZOD4_FORMATS = { __proto__: null, guid: "uuid", url: "uri", datetime: "date-time", json_string: "json-string", regex: "" };

  /**
   * What a zod 4 schema's checks say, folded the way zod 4.6's generator folds them (a
   * format schema is its own first check), then merged with `_zod.bag`, where zod < 4.6
   * keeps the same facts.
   */
  function zod4Checks(schema) {
    const agg = {
      __proto__: null, min: undefined, exMin: undefined, max: undefined, exMax: undefined, divisors: [],
      format: undefined, isInt: false, patterns: [], contentEncoding: undefined, laxFormat: false,
    };
    const z = schema._zod;
    const list = [];
    if (typeof z.check === "function") ArrayPrototypePush(list, schema);
    const checks = ArrayIsArray(z.def.checks) ? z.def.checks : [];
    for (let i = 0; i < checks.length; i++) ArrayPrototypePush(list, checks[i]);
    const setFormat = (format) => {
      if (typeof format !== "string") return;
      agg.format = format;
      if (StringPrototypeIncludes(format, "int")) agg.isInt = true;
    };
    const addPattern = (pattern) => {
      const source = regExpSource(pattern);
      if (source === undefined) return;
      for (let i = 0; i < agg.patterns.length; i++) if (agg.patterns[i] === source) return;
      ArrayPrototypePush(agg.patterns, source);
    };
    for (let i = 0; i < list.length; i++) {
      const check = list[i];
      const def = isObjectLike(check) && isObjectLike(check._zod) ? check._zod.def : undefined;
      if (!isObjectLike(def)) continue;
      switch (def.check) {
        case "greater_than": if (def.inclusive) agg.min = larger(agg.min, def.value); else agg.exMin = larger(agg.exMin, def.value); break;
        case "less_than": if (def.inclusive) agg.max = smaller(agg.max, def.value); else agg.exMax = smaller(agg.exMax, def.value); break;
        case "multiple_of": addDivisor(agg.divisors, def.value); break;
        case "number_format": {
          setFormat(def.format);
          const range = typeof def.format === "string" ? ZOD4_NUMBER_RANGES[def.format] : undefined;
          if (range !== undefined) { agg.min = larger(agg.min, range[0]); agg.max = smaller(agg.max, range[1]); }
          break;
        }
        case "min_length": case "min_size": agg.min = larger(agg.min, def.minimum); break;
        case "max_length": case "max_size": agg.max = smaller(agg.max, def.maximum); break;
        case "length_equals": agg.min = larger(agg.min, def.length); agg.max = smaller(agg.max, def.length); break;
        case "size_equals": agg.min = larger(agg.min, def.size); agg.max = smaller(agg.max, def.size); break;
        case "string_format":
          setFormat(def.format);
          if (def.pattern !== undefined) addPattern(def.pattern);
          if (def.format === "base64" || def.format === "base64url") agg.contentEncoding = def.format;
          if (def.local || def.precision === -1) agg.laxFormat = true;
          break;
      }
    }
    const bag = z.bag;
    if (isObjectLike(bag)) {
      agg.min = larger(agg.min, bag.minimum);
      agg.exMin = larger(agg.exMin, bag.exclusiveMinimum);
      agg.max = smaller(agg.max, bag.maximum);
      agg.exMax = smaller(agg.exMax, bag.exclusiveMaximum);
      addDivisor(agg.divisors, bag.multipleOf);
      if (typeof bag.format === "string") {
        if (agg.format === undefined) agg.format = bag.format;
        if (StringPrototypeIncludes(bag.format, "int")) agg.isInt = true;
      }
      if (typeof bag.contentEncoding === "string" && agg.contentEncoding === undefined) agg.contentEncoding = bag.contentEncoding;
      if (isObjectLike(bag.patterns)) {
        try {
          SetPrototypeForEach(bag.patterns, addPattern);
        } catch {
          // Not a Set: no patterns from the bag.
        }
      }
    }
    return agg;
  }

  /** A zod 4 string schema's JSON Schema. */
  function zod4String(schema) {
    const agg = zod4Checks(schema);
    const json = node("string");
    if (agg.min !== undefined) json.minLength = agg.min;
    if (agg.max !== undefined) json.maxLength = agg.max;
    const formats = [];
    if (agg.format !== undefined && agg.format !== "time" && !agg.laxFormat) {
      const mapped = ZOD4_FORMATS[agg.format];
      const format = mapped === undefined ? agg.format : mapped;
      if (format !== "") ArrayPrototypePush(formats, format);
    }
    if (agg.contentEncoding !== undefined) json.contentEncoding = agg.contentEncoding;
    writeFormatsAndPatterns(json, formats, agg.patterns);
    return json;
  }

  /** The optionality zod 4 declares for a key on input (past transforms and catch, as zod does). */
  function zod4InputOptin(schema, depth) {
    const z = schema._zod;
    const def = z.def;
    if (depth < MAX_SCHEMA_DEPTH) {
      if (def.type === "pipe" && isObjectLike(def.in) && def.in._zod.def.type === "transform") return zod4InputOptin(def.out, depth + 1);
      if (def.type === "catch") return zod4InputOptin(def.innerType, depth + 1);
    }
    return z.optin;
  }

  /** True when a zod 4 schema lets its object key (or trailing tuple item) be absent. */
  function zod4Optional(schema, io) {
    return io === "input" ? zod4InputOptin(schema, 0) !== undefined : schema._zod.optout !== undefined;
  }

  /** A zod 4 schema's registered metadata (description, title, ...), or undefined. */
  function zod4Meta(schema) {
    // zod >= 4.1 keeps its global registry on the global object; classic schemas also reach
    // it through `meta()` / `description`.
    const registry = GlobalThis.__zod_globalRegistry;
    let meta;
    if (isObjectLike(registry) && typeof registry.get === "function") meta = ReflectApply(registry.get, registry, [schema]);
    if (meta === undefined && typeof schema.meta === "function") meta = ReflectApply(schema.meta, schema, []);
    if (meta === undefined && typeof schema.description === "string") meta = { description: schema.description };
    return isObjectLike(meta) ? meta : undefined;
  }

  /** Converts one zod 4 schema node (see `visit`). */
  function zod4Convert(state, schema, path) {
    const z = schema._zod;
    const def = isObjectLike(z) ? z.def : undefined;
    if (!isObjectLike(def) || typeof def.type !== "string") {
      throw refusal(`${state.where}${path}: ${describeValue(schema)} is not a zod schema`);
    }
    const type = def.type;
    const io = state.io;
    const noJson = () => refusal(`${state.where}${path}: a zod ${cut(type)} schema has no JSON Schema`);
    let json;
    switch (type) {
      case "string": json = zod4String(schema); break;
      case "number": {
        const agg = zod4Checks(schema);
        json = node(agg.isInt ? "integer" : "number");
        writeNumberBounds(json, agg);
        break;
      }
      case "boolean": case "success": json = node("boolean"); break;
      case "null": json = node("null"); break;
      // A transform's output (and a bare transform's input) is whatever it is.
      case "any": case "unknown": case "transform": json = node(); break;
      case "never": json = node(); json.not = node(); break;
      case "enum": {
        const entries = def.entries;
        const keys = isObjectLike(entries) ? ObjectKeys(entries) : [];
        const numeric = new SafeSet();
        for (let i = 0; i < keys.length; i++) if (typeof entries[keys[i]] === "number") SetPrototypeAdd(numeric, entries[keys[i]]);
        const values = [];
        for (let i = 0; i < keys.length; i++) {
          if (SetPrototypeHas(numeric, NumberCtor(keys[i]))) continue;
          const value = entries[keys[i]];
          if (typeof value === "string" || (typeof value === "number" && NumberIsFinite(value))) ArrayPrototypePush(values, value);
        }
        json = enumJson(values);
        break;
      }
      case "literal": {
        const values = ArrayIsArray(def.values) ? def.values : [];
        const list = [];
        for (let i = 0; i < values.length; i++) {
          const one = typeof values[i] === "bigint" ? undefined : literalJson(values[i]);
          if (one === undefined) throw refusal(`${state.where}${path}: a zod literal of ${describeValue(values[i])} has no JSON Schema`);
          ArrayPrototypePush(list, values[i]);
        }
        if (list.length === 1) {
          json = literalJson(list[0]);
        } else {
          json = enumJson(list);
          let booleans = list.length > 0, nulls = list.length > 0;
          for (let i = 0; i < list.length; i++) {
            if (typeof list[i] !== "boolean") booleans = false;
            if (list[i] !== null) nulls = false;
          }
          if (booleans) json.type = "boolean";
          if (nulls) json.type = "null";
        }
        break;
      }
      case "template_literal": {
        const source = regExpSource(z.pattern);
        if (source === undefined) throw noJson();
        json = node("string");
        json.pattern = source;
        break;
      }
      case "file": {
        const agg = zod4Checks(schema);
        json = node("string");
        json.format = "binary";
        json.contentEncoding = "binary";
        if (agg.min !== undefined) json.minLength = agg.min;
        if (agg.max !== undefined) json.maxLength = agg.max;
        break;
      }
      case "array": {
        const agg = zod4Checks(schema);
        json = node("array");
        json.items = visit(state, def.element, `${path}[]`);
        if (agg.min !== undefined) json.minItems = agg.min;
        if (agg.max !== undefined) json.maxItems = agg.max;
        break;
      }
      case "object": {
        const shape = def.shape;
        if (!isObjectLike(shape)) throw noJson();
        if (ObjectGetOwnPropertySymbols(shape).length > 0) {
          throw refusal(`${state.where}${path}: a zod object with symbol keys has no JSON Schema`);
        }
        json = node("object");
        const properties = { __proto__: null };
        const required = [];
        const keys = ObjectKeys(shape);
        for (let i = 0; i < keys.length; i++) {
          const field = shape[keys[i]];
          properties[keys[i]] = visit(state, field, `${path}${pathStep(keys[i])}`);
          if (!zod4Optional(field, io)) ArrayPrototypePush(required, keys[i]);
        }
        json.properties = properties;
        if (required.length > 0) json.required = required;
        const catchall = def.catchall;
        if (isObjectLike(catchall) && isObjectLike(catchall._zod) && catchall._zod.def.type === "never") {
          json.additionalProperties = false;
        } else if (!isObjectLike(catchall)) {
          if (io === "output") json.additionalProperties = false;
        } else {
          json.additionalProperties = visit(state, catchall, `${path}[*]`);
        }
        break;
      }
      case "union": {
        const options = ArrayIsArray(def.options) ? def.options : [];
        const members = [];
        for (let i = 0; i < options.length; i++) ArrayPrototypePush(members, visit(state, options[i], path));
        json = node();
        if (def.inclusive === false) {
          json.oneOf = members;
        } else {
          json.anyOf = members;
          compactTypeUnion(json);
        }
        break;
      }
      case "intersection":
        json = intersection(visit(state, def.left, path), visit(state, def.right, path));
        break;
      case "tuple": {
        json = node("array");
        const items = ArrayIsArray(def.items) ? def.items : [];
        const prefix = [];
        for (let i = 0; i < items.length; i++) ArrayPrototypePush(prefix, visit(state, items[i], `${path}[${i}]`));
        if (prefix.length > 0) json.prefixItems = prefix;
        let minItems = items.length;
        while (minItems > 0 && zod4Optional(items[minItems - 1], io)) minItems--;
        if (isObjectLike(def.rest)) {
          json.items = visit(state, def.rest, `${path}[]`);
        } else {
          json.items = false;
        }
        if (minItems > 0) json.minItems = minItems;
        if (!isObjectLike(def.rest)) json.maxItems = items.length;
        const agg = zod4Checks(schema);
        if (agg.min !== undefined) json.minItems = agg.min;
        if (agg.max !== undefined) json.maxItems = agg.max;
        break;
      }
      case "record": {
        json = node("object");
        json.propertyNames = visit(state, def.keyType, `${path}{key}`);
        json.additionalProperties = visit(state, def.valueType, `${path}[*]`);
        // An enum / literal key type names every key; all are required (as zod does).
        const keyValues = isObjectLike(def.keyType) ? def.keyType._zod.values : undefined;
        if (isObjectLike(keyValues) && !def.partial && !(io === "input" && zod4InputOptin(def.valueType, 0) !== undefined)) {
          const required = [];
          try {
            SetPrototypeForEach(keyValues, (v) => {
              if (typeof v === "string" || typeof v === "number") ArrayPrototypePush(required, StringCtor(v));
            });
          } catch {
            // Not a Set: no required keys.
          }
          if (required.length > 0) json.required = required;
        }
        break;
      }
      case "nullable":
        json = nullable(visit(state, def.innerType, path));
        break;
      case "optional": case "nonoptional": case "promise":
        json = visit(state, def.innerType, path);
        break;
      case "readonly":
        json = visit(state, def.innerType, path);
        json.readOnly = true;
        break;
      case "default": case "prefault": {
        json = visit(state, def.innerType, path);
        if (type === "default" || io === "input") {
          let value;
          try {
            value = defaultJson(typeof def.defaultValue === "function" ? ReflectApply(def.defaultValue, def, []) : def.defaultValue);
          } catch {
            value = undefined;
          }
          if (value !== undefined) json.default = value;
        }
        break;
      }
      case "catch": {
        json = visit(state, def.innerType, path);
        let value;
        try {
          value = typeof def.catchValue === "function" ? defaultJson(ReflectApply(def.catchValue, def, [undefined])) : undefined;
        } catch {
          value = undefined;
        }
        if (value !== undefined) json.default = value;
        break;
      }
      case "pipe": {
        const inIsTransform = isObjectLike(def.in) && isObjectLike(def.in._zod) && def.in._zod.def.type === "transform";
        json = visit(state, io === "input" && !inIsTransform ? def.in : def.out, path);
        break;
      }
      case "lazy": {
        const inner = z.innerType !== undefined ? z.innerType : (typeof def.getter === "function" ? ReflectApply(def.getter, def, []) : undefined);
        json = visit(state, inner, path);
        break;
      }
      default:
        // bigint, symbol, undefined, void, date, nan, map, set, function, custom, ...
        throw noJson();
    }
    const meta = zod4Meta(schema);
    if (meta !== undefined) {
      const keys = ObjectKeys(meta);
      for (let i = 0; i < keys.length; i++) {
        if (keys[i] === "id") continue;
        const value = defaultJson(meta[keys[i]]);
        if (value !== undefined) json[keys[i]] = value;
      }
    }
    return json;
  }

  /** The data path a zod 4 generator's JSON Schema path stands for (`["properties", "a", "items"]` → `.a[]`). */
  function dataPathOf(jsonPath) {
    if (!ArrayIsArray(jsonPath)) return "";
    let path = "";
    for (let i = 0; i < jsonPath.length; i++) {
      const step = jsonPath[i];
      switch (step) {
        case "properties": if (i + 1 < jsonPath.length) path += pathStep(jsonPath[++i]); break;
        case "items": case "additionalItems": path += "[]"; break;
        case "prefixItems": if (i + 1 < jsonPath.length) path += `[${StringCtor(jsonPath[++i])}]`; break;
        case "additionalProperties": path += "[*]"; break;
        case "patternProperties": i++; path += "[*]"; break;
        case "propertyNames": path += "{key}"; break;
        case "anyOf": case "oneOf": case "allOf": case "$defs": case "definitions": i++; break;
      }
    }
    return path;
  }

  /** True for a zod 4 whose Standard JSON Schema takes an `unrepresentable` function (zod >= 4.5). */
  function zodTakesHandler(z) {
    const version = z.version;
    if (!isObjectLike(version) || typeof version.major !== "number" || typeof version.minor !== "number") return false;
    return version.major > 4 || (version.major === 4 && version.minor >= 5);
  }

  /** A zod 4 schema's JSON Schema: zod's own when it can give it with our options, else converted here. */
  function zod4JsonSchema(value, where, io) {
    const z = value._zod;
    const standard = value["~standard"];
    const jsonSchema = isObjectLike(standard) ? standard.jsonSchema : undefined;
    const generate = isObjectLike(jsonSchema) ? jsonSchema[io] : undefined;
    if (typeof generate === "function" && zodTakesHandler(z)) {
      let own;
      const unrepresentable = (info) => {
        const target = isObjectLike(info) ? info.zodSchema : undefined;
        const type = isObjectLike(target) && isObjectLike(target._zod) ? target._zod.def.type : undefined;
        if (type === "transform") return "any";
        const path = dataPathOf(isObjectLike(info) ? info.path : undefined);
        own = refusal(`${where}${path}: a zod ${typeof type === "string" ? cut(type) : "(unknown)"} schema has no JSON Schema`);
        throw own;
      };
      let raw;
      try {
        raw = ReflectApply(generate, jsonSchema, [{ target: "draft-2020-12", libraryOptions: { unrepresentable } }]);
      } catch (error) {
        if (error === own) throw error;
        throw refusal(`${where}: zod could not give a JSON Schema: ${thrownText(error)}`);
      }
      return libraryJson(raw, where, "zod");
    }
    const state = walkState(where, io, "zod", zod4Convert);
    return finishWalk(state, visit(state, value, ""));
  }

  // ---------------------------------------------------------------------------------
  // Parsing
  // ---------------------------------------------------------------------------------

  /** `input.a.b[1]` for an issue's path (keys, or Standard Schema's `{ key }` segments). */
  function issuePath(io, path) {
    let text = io;
    if (!ArrayIsArray(path)) return text;
    for (let i = 0; i < path.length; i++) {
      let key = path[i];
      if (isObjectLike(key)) key = key.key;
      if (typeof key === "string" || typeof key === "number" || typeof key === "symbol") text += pathStep(key);
    }
    return text;
  }

  /** A failure message naming each issue's path: `input.b: Expected number, received string; ...`. */
  function issuesMessage(io, issues) {
    if (!isObjectLike(issues) || typeof issues.length !== "number" || issues.length === 0) return `${io}: the value is not valid`;
    const parts = [];
    const count = issues.length;
    for (let i = 0; i < count && i < MAX_ISSUES; i++) {
      const issue = issues[i];
      const message = isObjectLike(issue) && typeof issue.message === "string" && issue.message ? cut(issue.message) : "invalid value";
      ArrayPrototypePush(parts, `${issuePath(io, isObjectLike(issue) ? issue.path : undefined)}: ${message}`);
    }
    if (count > MAX_ISSUES) ArrayPrototypePush(parts, `and ${count - MAX_ISSUES} more issues`);
    return ArrayPrototypeJoin(parts, "; ");
  }

  /** `{ ok: true, value }`. */
  function parsed(value) {
    return { __proto__: null, ok: true, value };
  }

  /** `{ ok: false, message }`. */
  function failed(message) {
    return { __proto__: null, ok: false, message };
  }

  /** A parse function over zod's `safeParseAsync` (zod 3 and zod 4). */
  function zodParse(schema, safeParseAsync, io) {
    return async function parse(value) {
      let result;
      try {
        result = await ReflectApply(safeParseAsync, schema, [value]);
        if (isObjectLike(result) && result.success === true) return parsed(result.data);
        const error = isObjectLike(result) ? result.error : undefined;
        return failed(issuesMessage(io, isObjectLike(error) ? error.issues : undefined));
      } catch (error) {
        return failed(`${io}: the schema's validation threw: ${thrownText(error)}`);
      }
    };
  }

  /** A parse function over a Standard Schema's `~standard.validate`. */
  function standardParse(standard, validate, io) {
    return async function parse(value) {
      try {
        const result = await ReflectApply(validate, standard, [value]);
        if (!isObjectLike(result)) return failed(`${io}: the schema's validation gave no result`);
        const issues = result.issues;
        if (issues === undefined || issues === null) return parsed(result.value);
        return failed(issuesMessage(io, issues));
      } catch (error) {
        return failed(`${io}: the schema's validation threw: ${thrownText(error)}`);
      }
    };
  }

  /** The identity parse function for JSON Schema objects (the host validates). */
  async function identityParse(value) {
    return parsed(value);
  }

  // ---------------------------------------------------------------------------------
  // The API
  // ---------------------------------------------------------------------------------

  /** `kindOf`, letting a throwing getter through. */
  function detect(value) {
    if (!isObjectLike(value)) return null;
    const z = value._zod;
    if (isObjectLike(z) && isObjectLike(z.def) && typeof z.def.type === "string") return "zod4";
    const def = value._def;
    if (z === undefined && isObjectLike(def) && typeof def.typeName === "string" && typeof value.safeParseAsync === "function") return "zod3";
    const standard = value["~standard"];
    if (isObjectLike(standard) && standard.version === 1 && typeof standard.validate === "function") return "standard";
    if (isPlainObject(value) && readJsonSchema(value, "schema").message === undefined) return "json";
    return null;
  }

  /**
   * Which form `value` is in: "json" (a plain JSON Schema object), "zod4", "zod3",
   * "standard" (another Standard Schema v1), or null (not a schema).
   * @param {unknown} value
   * @returns {"json" | "zod4" | "zod3" | "standard" | null}
   */
  function kindOf(value) {
    try {
      return detect(value);
    } catch {
      return null;
    }
  }

  /** The Standard Schema library's name, for messages. */
  function vendorOf(standard) {
    const vendor = standard.vendor;
    return typeof vendor === "string" && vendor ? cut(vendor) : "Standard Schema";
  }

  /** A Standard Schema's JSON Schema, or a refusal saying what to do. */
  function standardJsonSchema(value, standard, where, io) {
    const vendor = vendorOf(standard);
    const jsonSchema = standard.jsonSchema;
    let generate, self, args;
    if (isObjectLike(jsonSchema) && typeof jsonSchema[io] === "function") {
      generate = jsonSchema[io];
      self = jsonSchema;
      args = [{ target: "draft-2020-12" }];
    } else if (typeof value.toJsonSchema === "function") {
      generate = value.toJsonSchema;
      self = value;
      args = [];
    } else if (typeof value.toJSONSchema === "function") {
      generate = value.toJSONSchema;
      self = value;
      args = [];
    } else {
      const hint = vendor === "valibot" ? " (for valibot: toStandardJsonSchema(schema) from @valibot/to-json-schema)" : "";
      throw refusal(`${where}: a ${vendor} schema gives no JSON Schema (it has no "~standard".jsonSchema and no toJsonSchema() method); ` +
        `pass a JSON Schema object instead, or a schema that implements Standard JSON Schema${hint}`);
    }
    let raw;
    try {
      raw = ReflectApply(generate, self, args);
    } catch (error) {
      throw refusal(`${where}: ${vendor} could not give a JSON Schema: ${thrownText(error)}`);
    }
    return libraryJson(raw, where, vendor);
  }

  /**
   * A tool schema in whatever form the plugin gave it, made usable: its JSON Schema (plain
   * JSON, draft 2020-12) and a function that parses a value with it.
   * @param {unknown} value the plugin's schema
   * @param {string} where what names it in messages ("tool add: inputSchema")
   * @param {"input" | "output"} io which side of a transform or default to describe
   * @returns {{ kind: string, jsonSchema: object, parse: (value: unknown) => Promise<{ ok: true, value: unknown } | { ok: false, message: string }> }}
   */
  function toolSchema(value, where, io) {
    if (typeof where !== "string") throw new TypeErrorCtor("schemas.toolSchema: `where` must be a string");
    if (io !== "input" && io !== "output") throw new TypeErrorCtor('schemas.toolSchema: `io` must be "input" or "output"');
    let kind;
    try {
      kind = detect(value);
    } catch (error) {
      throw refusal(`${where} could not be read: ${thrownText(error)}`);
    }
    try {
      switch (kind) {
        case "json":
          return ObjectFreeze({ __proto__: null, kind, jsonSchema: readJsonSchema(value, where).jsonSchema, parse: identityParse });
        case "zod4": {
          const jsonSchema = zod4JsonSchema(value, where, io);
          const safeParseAsync = value.safeParseAsync;
          let parse;
          if (typeof safeParseAsync === "function") {
            parse = zodParse(value, safeParseAsync, io);
          } else {
            const standard = value["~standard"];
            if (!isObjectLike(standard) || typeof standard.validate !== "function") {
              throw refusal(`${where}: the zod schema has neither safeParseAsync nor "~standard".validate`);
            }
            parse = standardParse(standard, standard.validate, io);
          }
          return ObjectFreeze({ __proto__: null, kind, jsonSchema, parse });
        }
        case "zod3": {
          const state = walkState(where, io, "zod", zod3Convert);
          const jsonSchema = finishWalk(state, visit(state, value, ""));
          return ObjectFreeze({ __proto__: null, kind, jsonSchema, parse: zodParse(value, value.safeParseAsync, io) });
        }
        case "standard": {
          const standard = value["~standard"];
          const validate = standard.validate;
          const jsonSchema = standardJsonSchema(value, standard, where, io);
          return ObjectFreeze({ __proto__: null, kind, jsonSchema, parse: standardParse(standard, validate, io) });
        }
      }
      if (isPlainObject(value)) throw refusal(readJsonSchema(value, where).message);
      throw refusal(`${where} ${EXPECTED}; got ${describeValue(value)}`);
    } catch (error) {
      if (isRefusal(error)) throw error;
      throw refusal(`${where}: reading the ${kind === null ? "" : `${kind} `}schema failed: ${thrownText(error)}`);
    }
  }

  return { __proto__: null, kindOf, toolSchema };
})();

export { schemas };
