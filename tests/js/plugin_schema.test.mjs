// Tests of sandbox-worker/src/plugin/js/plugin_schema.js against the real schema libraries.
//
//   npm install --prefix /tmp/schema-work zod@4 zod3@npm:zod@3.25 valibot@1 \
//     @valibot/to-json-schema@1 arktype@2
//   node --test tests/js/plugin_schema.test.mjs
//
// SCHEMA_TEST_NODE_MODULES names the node_modules folder holding them (default
// /tmp/schema-work/node_modules); zod 3 is installed under the alias `zod3`.
//
// The module is evaluated the way the runtime evaluates it: as text inside a strict
// function of `primordials`. The primordials are built here with deno_core's naming
// scheme (00_primordials.js) for exactly the names the module destructures, so a name
// that deno_core would not provide fails the test.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
// The module's one `export { schemas };` line is the bundle step's (sandbox-worker/build.rs);
// here the text runs as a function body, which returns `schemas` instead.
const source = readFileSync(join(here, "../../sandbox-worker/src/plugin/js/plugin_schema.js"), "utf8")
  .replace(/^export \{ schemas \};$/m, "");
const modules = process.env.SCHEMA_TEST_NODE_MODULES ?? "/tmp/schema-work/node_modules";

// ---- primordials, named as deno_core names them ------------------------------------

/** deno_core's primordials, rebuilt for the intrinsics the module may use. */
function denoPrimordials() {
  const p = {};
  const uncurryThis = (fn) => Function.prototype.call.bind(fn);
  const newKey = (key) => (typeof key === "symbol" ? `Symbol${key.description[7].toUpperCase()}${key.description.slice(8)}` : `${key[0].toUpperCase()}${key.slice(1)}`);
  const copy = (src, prefix, method) => {
    for (const key of Reflect.ownKeys(src)) {
      const desc = Reflect.getOwnPropertyDescriptor(src, key);
      const name = newKey(key);
      if ("get" in desc) {
        if (desc.get) p[`${prefix}Get${name}`] = uncurryThis(desc.get);
      } else {
        p[`${prefix}${name}`] = method && typeof desc.value === "function" ? uncurryThis(desc.value) : desc.value;
      }
    }
  };
  p.globalThis = globalThis;
  for (const name of ["JSON", "Math", "Reflect"]) copy(globalThis[name], name, false);
  for (const name of ["Array", "Error", "Map", "Number", "Object", "RegExp", "Set", "String", "Symbol", "TypeError", "WeakMap", "WeakSet", "Promise"]) {
    p[name] = globalThis[name];
    copy(globalThis[name], name, false);
    copy(globalThis[name].prototype, `${name}Prototype`, true);
  }
  p.SafeMap = class SafeMap extends Map {};
  p.SafeSet = class SafeSet extends Set {};
  p.SafeWeakSet = class SafeWeakSet extends WeakSet {};
  return p;
}

/** The names the module's first `= primordials` destructuring takes. */
function namesUsed(text) {
  const match = /const \{([^}]*)\} = primordials;/.exec(text);
  assert.ok(match, "plugin_schema.js destructures primordials");
  return match[1].split(",").map((part) => part.trim().split(":")[0].trim()).filter(Boolean);
}

const primordials = (() => {
  const all = denoPrimordials();
  const shim = Object.create(null);
  for (const name of namesUsed(source)) {
    assert.ok(name in all, `deno_core has no primordial named ${name}`);
    shim[name] = all[name];
  }
  return shim;
})();

const schemas = new Function("primordials", `"use strict";\n${source}\nreturn schemas;`)(primordials);

// ---- the libraries -----------------------------------------------------------------

const requireFrom = createRequire(join(modules, "noop.js"));
const load = (specifier) => import(pathToFileURL(requireFrom.resolve(specifier)).href);
const { z: z4 } = await load("zod");
const zm = await load("zod/mini");
const { z: z3 } = await load("zod3");
const { z: z3v4 } = await load("zod3/v4");
const v = await load("valibot");
const { toStandardJsonSchema } = await load("@valibot/to-json-schema");
const { type } = await load("arktype");

const WHERE = "tool add: inputSchema";
const toolIn = (schema) => schemas.toolSchema(schema, WHERE, "input");
const toolOut = (schema) => schemas.toolSchema(schema, "tool add: outputSchema", "output");
/** A plain copy, to compare with deepEqual (the module's objects already are plain). */
const plain = (value) => JSON.parse(JSON.stringify(value));

// ---- the API shape ----------------------------------------------------------------

test("the module defines one object with kindOf and toolSchema", () => {
  assert.deepEqual(Object.keys(schemas).sort(), ["kindOf", "toolSchema"]);
  const result = toolIn({ type: "object" });
  assert.equal(Object.getPrototypeOf(result), null);
  assert.deepEqual(Object.keys(result), ["kind", "jsonSchema", "parse"]);
  assert.throws(() => schemas.toolSchema({}, WHERE, "inbound"), /io/);
});

test("kindOf tells each form apart", () => {
  assert.equal(schemas.kindOf({ type: "object", properties: {} }), "json");
  assert.equal(schemas.kindOf({}), "json");
  assert.equal(schemas.kindOf(Object.assign(Object.create(null), { type: "string" })), "json");
  assert.equal(schemas.kindOf(z4.string()), "zod4");
  assert.equal(schemas.kindOf(zm.string()), "zod4");
  assert.equal(schemas.kindOf(z3v4.string()), "zod4");
  assert.equal(schemas.kindOf(z3.string()), "zod3");
  assert.equal(schemas.kindOf(v.string()), "standard");
  assert.equal(schemas.kindOf(type("string")), "standard");
  for (const value of ["x", 1, null, undefined, () => {}, [], new (class Foo {})(), { foo: 1 }, new Date(), { type: 1 }]) {
    assert.equal(schemas.kindOf(value), null, String(value));
  }
  const throwing = { get _zod() { throw new Error("boom"); } };
  assert.equal(schemas.kindOf(throwing), null);
});

// ---- plain JSON Schema ------------------------------------------------------------

test("a JSON Schema object is copied as plain JSON and parsed as is", async () => {
  const input = { type: "object", properties: { a: { type: "number", "x-unit": "m" } }, required: ["a"], additionalProperties: false };
  const result = toolIn(input);
  assert.equal(result.kind, "json");
  assert.deepEqual(result.jsonSchema, input);
  assert.notEqual(result.jsonSchema, input);
  assert.equal(Object.getPrototypeOf(result.jsonSchema), Object.prototype);
  const value = { a: "not checked here" };
  assert.deepEqual(plain(await result.parse(value)), { ok: true, value });
  assert.equal((await result.parse(value)).value, value);
});

test("a __proto__ property name stays a property", () => {
  const input = JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"}}}');
  const result = toolIn(input);
  assert.deepEqual(Object.keys(result.jsonSchema.properties), ["__proto__"]);
  assert.deepEqual(JSON.stringify(result.jsonSchema), JSON.stringify(input));
});

test("things that are not schemas are refused, naming the place", () => {
  const refused = (value, message) => assert.throws(() => toolIn(value), (error) => {
    assert.ok(error instanceof TypeError, "a TypeError");
    assert.equal(error.message, message);
    return true;
  });
  const expected = `${WHERE} must be a JSON Schema object or a zod / Standard Schema schema; got`;
  refused("object", `${expected} a string`);
  refused(42, `${expected} a number`);
  refused(undefined, `${expected} undefined`);
  refused(null, `${expected} null`);
  refused(function handler() {}, `${expected} a function`);
  refused([{ type: "string" }], `${expected} an array`);
  class Shape { constructor() { this.type = "object"; } }
  refused(new Shape(), `${expected} an instance of Shape`);
  refused(new Map(), `${expected} an instance of Map`);
  refused({ foo: 1 }, `${expected} an object whose keys are not JSON Schema keywords ("foo")`);
  refused({ type: "object", handler() {} }, `${expected} an object that is not JSON (.handler is a function)`);
  refused({ type: "object", properties: { a: { type: "string", default: undefined } } },
    `${expected} an object that is not JSON (.properties.a.default is undefined)`);
  const cycle = { type: "object", properties: {} };
  cycle.properties.self = cycle;
  refused(cycle, `${expected} an object that is not JSON (.properties.self is a circular reference)`);
  refused({ type: "object", default: new Date(0) }, `${expected} an object that is not JSON (.default is an instance of Date)`);
  refused({ type: "object", properties: { a: "string" } },
    `${WHERE}.properties.a must be a JSON Schema (an object or a boolean); got a string`);
  refused({ type: "object", properties: { a: { type: "str" } } },
    `${WHERE}.properties.a.type must be a JSON Schema type name (array, boolean, integer, null, number, object, string) or a list of them; got "str"`);
  refused({ type: "object", properties: { a: { type: "string", minlength: 2 } } },
    `${WHERE}.properties.a has keys that are not JSON Schema keywords ("minlength")`);
  refused({ type: "object", required: "a" }, `${WHERE}.required must be an array of property names; got a string`);
  refused({ anyOf: [] }, `${WHERE}.anyOf must be a non-empty array of JSON Schemas; got an array`);
});

// ---- zod 3 -------------------------------------------------------------------------

test("zod 3: an object's JSON Schema, input side", () => {
  const schema = z3.object({
    name: z3.string().min(1).max(40).describe("who"),
    count: z3.number(),
    whole: z3.number().int().gte(0).lt(10),
    nick: z3.string().optional(),
    size: z3.number().default(3),
    color: z3.enum(["red", "green"]),
    tags: z3.array(z3.string()).min(1),
    owner: z3.object({ id: z3.string().uuid(), mail: z3.string().email() }).strict(),
    id: z3.union([z3.string(), z3.number()]),
    note: z3.string().nullable(),
  }).describe("an addition");
  const result = toolIn(schema);
  assert.equal(result.kind, "zod3");
  assert.deepEqual(result.jsonSchema, {
    type: "object",
    description: "an addition",
    properties: {
      name: { type: "string", minLength: 1, maxLength: 40, description: "who" },
      count: { type: "number" },
      whole: { type: "integer", minimum: 0, exclusiveMaximum: 10 },
      nick: { type: "string" },
      size: { type: "number", default: 3 },
      color: { type: "string", enum: ["red", "green"] },
      tags: { type: "array", items: { type: "string" }, minItems: 1 },
      owner: {
        type: "object",
        properties: { id: { type: "string", format: "uuid" }, mail: { type: "string", format: "email" } },
        required: ["id", "mail"],
        additionalProperties: false,
      },
      id: { type: ["string", "number"] },
      note: { type: ["string", "null"] },
    },
    required: ["name", "count", "whole", "color", "tags", "owner", "id", "note"],
  });
});

test("zod 3: the output side requires defaulted fields and closes stripped objects", () => {
  const schema = z3.object({ size: z3.number().default(3), length: z3.string().transform((s) => s.length) });
  assert.deepEqual(toolOut(schema).jsonSchema, {
    type: "object",
    properties: { size: { type: "number", default: 3 }, length: {} },
    required: ["size", "length"],
    additionalProperties: false,
  });
  assert.deepEqual(toolIn(schema).jsonSchema, {
    type: "object",
    properties: { size: { type: "number", default: 3 }, length: { type: "string" } },
    required: ["length"],
  });
});

test("zod 3: parse applies defaults and transforms and names failing paths", async () => {
  const schema = z3.object({
    a: z3.string(),
    b: z3.number(),
    size: z3.number().default(3),
    tags: z3.array(z3.string()).optional(),
    word: z3.string().transform((s) => s.toUpperCase()),
  });
  const result = toolIn(schema);
  assert.deepEqual(plain(await result.parse({ a: "x", b: 1, word: "hi" })), { ok: true, value: { a: "x", b: 1, size: 3, word: "HI" } });
  const bad = await result.parse({ a: "x", b: "2", tags: ["ok", undefined], word: "w" });
  assert.equal(Object.getPrototypeOf(bad), null);
  assert.deepEqual(plain(bad), { ok: false, message: "input.b: Expected number, received string; input.tags[1]: Required" });
  const odd = await toolIn(z3.object({ "a b": z3.object({ c: z3.boolean() }) })).parse({ "a b": { c: 1 } });
  assert.equal(odd.message, 'input["a b"].c: Expected boolean, received number');
  const out = await toolOut(z3.object({ n: z3.number() })).parse({ n: "x" });
  assert.equal(out.message, "output.n: Expected number, received string");
  const threw = await toolIn(z3.object({ a: z3.string().transform(() => { throw new Error("kaput"); }) })).parse({ a: "x" });
  assert.deepEqual(plain(threw), { ok: false, message: "input: the schema's validation threw: kaput" });
});

test("zod 3: recursion through lazy gives $defs and $ref", () => {
  const Category = z3.lazy(() => z3.object({ name: z3.string(), children: z3.array(Category) }));
  assert.deepEqual(toolIn(z3.object({ root: Category })).jsonSchema, {
    type: "object",
    properties: { root: { $ref: "#/$defs/__schema0" } },
    required: ["root"],
    $defs: {
      __schema0: {
        type: "object",
        properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#/$defs/__schema0" } } },
        required: ["name", "children"],
      },
    },
  });
  // A recursive root (through lazy, under a refine) stays an object at the top.
  const Tree = z3.lazy(() => z3.object({ value: z3.number(), next: Tree.optional() })).refine(() => true);
  assert.deepEqual(toolIn(Tree).jsonSchema, {
    type: "object",
    properties: { value: { type: "number" }, next: { $ref: "#" } },
    required: ["value"],
  });
});

test("zod 3: types without a JSON form are refused naming the path", () => {
  const refused = (schema, message) => assert.throws(
    () => schemas.toolSchema(schema, "tool deploy_status: parameters", "input"),
    (error) => error instanceof TypeError && error.message === message,
  );
  refused(z3.object({ service: z3.function() }), "tool deploy_status: parameters.service: a zod ZodFunction has no JSON Schema");
  refused(z3.object({ a: z3.object({ b: z3.array(z3.promise(z3.string())) }) }), "tool deploy_status: parameters.a.b[]: a zod ZodPromise has no JSON Schema");
  refused(z3.object({ s: z3.symbol() }), "tool deploy_status: parameters.s: a zod ZodSymbol has no JSON Schema");
  refused(z3.object({ u: z3.undefined() }), "tool deploy_status: parameters.u: a zod ZodUndefined has no JSON Schema");
  refused(z3.object({ n: z3.never() }), "tool deploy_status: parameters.n: a zod ZodNever has no JSON Schema");
  refused(z3.object({ l: z3.literal(undefined) }), "tool deploy_status: parameters.l: a zod ZodLiteral of undefined has no JSON Schema");
});

test("zod 3: the rest of the types", () => {
  const json = (schema) => toolIn(z3.object({ x: schema })).jsonSchema.properties.x;
  const out = (schema) => toolOut(z3.object({ x: schema })).jsonSchema.properties.x;
  assert.deepEqual(json(z3.string().url().startsWith("https://").endsWith("/")), {
    type: "string", format: "uri", allOf: [{ pattern: "^https:\\/\\/" }, { pattern: "\\/$" }],
  });
  assert.deepEqual(json(z3.string().regex(/^[a-z]+$/).length(4)), { type: "string", pattern: "^[a-z]+$", minLength: 4, maxLength: 4 });
  assert.deepEqual(json(z3.string().datetime()), { type: "string", format: "date-time" });
  assert.deepEqual(json(z3.string().date()), { type: "string", format: "date" });
  assert.deepEqual(json(z3.string().time()), { type: "string", pattern: "^([01]\\d|2[0-3]):[0-5]\\d(:[0-5]\\d(\\.\\d+)?)?$" });
  assert.deepEqual(json(z3.string().ip({ version: "v4" })), { type: "string", format: "ipv4" });
  assert.deepEqual(json(z3.string().ip()), { type: "string", anyOf: [{ format: "ipv4" }, { format: "ipv6" }] });
  assert.deepEqual(json(z3.string().cuid()), { type: "string", pattern: "^[cC][^\\s-]{8,}$" });
  assert.deepEqual(json(z3.string().includes("a.b")), { type: "string", pattern: "a\\.b" });
  assert.deepEqual(json(z3.number().gt(0).lte(1).multipleOf(0.25)), { type: "number", exclusiveMinimum: 0, maximum: 1, multipleOf: 0.25 });
  assert.deepEqual(json(z3.number().finite().safe()), { type: "number", minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER });
  assert.deepEqual(json(z3.bigint().gte(1n)), { type: "integer", format: "int64", minimum: 1 });
  assert.deepEqual(json(z3.boolean()), { type: "boolean" });
  assert.deepEqual(json(z3.date()), { type: "string", format: "date-time" });
  assert.deepEqual(json(z3.null()), { type: "null" });
  assert.deepEqual(json(z3.literal("on")), { type: "string", const: "on" });
  assert.deepEqual(json(z3.literal(7)), { type: "number", const: 7 });
  const Level = { Low: 0, High: 1, 0: "Low", 1: "High" }; // what TypeScript makes of `enum Level { Low, High }`
  assert.deepEqual(json(z3.nativeEnum(Level)), { type: "number", enum: [0, 1] });
  assert.deepEqual(json(z3.nativeEnum({ A: "a", B: "b" })), { type: "string", enum: ["a", "b"] });
  assert.deepEqual(json(z3.tuple([z3.string(), z3.number()])), {
    type: "array", prefixItems: [{ type: "string" }, { type: "number" }], items: false, minItems: 2, maxItems: 2,
  });
  assert.deepEqual(json(z3.tuple([z3.string()]).rest(z3.boolean())), {
    type: "array", prefixItems: [{ type: "string" }], items: { type: "boolean" }, minItems: 1,
  });
  assert.deepEqual(json(z3.discriminatedUnion("k", [z3.object({ k: z3.literal("a") }), z3.object({ k: z3.literal("b"), n: z3.number() })])), {
    anyOf: [
      { type: "object", properties: { k: { type: "string", const: "a" } }, required: ["k"] },
      { type: "object", properties: { k: { type: "string", const: "b" }, n: { type: "number" } }, required: ["k", "n"] },
    ],
  });
  // Object members fold into one object (an allOf of closed objects would reject each other's keys).
  assert.deepEqual(toolOut(z3.object({ a: z3.string() }).and(z3.object({ b: z3.number() }))).jsonSchema, {
    type: "object", properties: { a: { type: "string" }, b: { type: "number" } }, required: ["a", "b"], additionalProperties: false,
  });
  assert.deepEqual(json(z3.intersection(z3.object({ a: z3.string() }), z3.object({ a: z3.string().min(1) }).passthrough())), {
    type: "object", properties: { a: { allOf: [{ type: "string" }, { type: "string", minLength: 1 }] } }, required: ["a"],
  });
  assert.deepEqual(json(z3.intersection(z3.string().min(1), z3.string().max(3))), {
    allOf: [{ type: "string", minLength: 1 }, { type: "string", maxLength: 3 }],
  });
  assert.deepEqual(json(z3.record(z3.number())), { type: "object", additionalProperties: { type: "number" } });
  assert.deepEqual(json(z3.record(z3.string().regex(/^k/), z3.number())), {
    type: "object", propertyNames: { type: "string", pattern: "^k" }, additionalProperties: { type: "number" },
  });
  assert.deepEqual(json(z3.map(z3.string(), z3.number())), {
    type: "array",
    items: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }], items: false, minItems: 2, maxItems: 2 },
  });
  assert.deepEqual(json(z3.set(z3.string()).max(3)), { type: "array", uniqueItems: true, items: { type: "string" }, maxItems: 3 });
  assert.deepEqual(json(z3.object({ a: z3.string() }).passthrough()), { type: "object", properties: { a: { type: "string" } }, required: ["a"] });
  assert.deepEqual(json(z3.object({ a: z3.string() }).catchall(z3.number())), {
    type: "object", properties: { a: { type: "string" } }, required: ["a"], additionalProperties: { type: "number" },
  });
  assert.deepEqual(json(z3.string().catch("none")), { type: "string", default: "none" });
  assert.deepEqual(json(z3.string().brand("Id").readonly()), { type: "string", readOnly: true });
  assert.deepEqual(json(z3.preprocess((x) => String(x), z3.string())), { type: "string" });
  assert.deepEqual(json(z3.string().pipe(z3.coerce.number())), { type: "string" });
  assert.deepEqual(out(z3.string().pipe(z3.coerce.number())), { type: "number" });
  assert.deepEqual(json(z3.any()), {});
  assert.deepEqual(json(z3.unknown().describe("anything")), { description: "anything" });
  assert.deepEqual(toolIn(z3.object({ a: z3.any(), b: z3.union([z3.string(), z3.undefined()]) })).jsonSchema.required, undefined);
});

// ---- zod 4 -------------------------------------------------------------------------

/** The object each zod 4 flavour is tested with, built from its own functions. */
function zod4Fields(z) {
  return {
    name: z.string().min(1).max(40).describe("who"),
    count: z.number(),
    whole: z.number().int().gte(0).lt(10),
    nick: z.string().optional(),
    size: z.number().default(3),
    color: z.enum(["red", "green"]),
    tags: z.array(z.string()).min(1),
    owner: z.strictObject({ id: z.string() }),
    id: z.union([z.string(), z.number()]),
    note: z.string().nullable(),
  };
}

const ZOD4_INPUT = {
  type: "object",
  properties: {
    name: { type: "string", minLength: 1, maxLength: 40, description: "who" },
    count: { type: "number" },
    whole: { type: "integer", minimum: 0, exclusiveMaximum: 10 },
    nick: { type: "string" },
    size: { type: "number", default: 3 },
    color: { type: "string", enum: ["red", "green"] },
    tags: { type: "array", items: { type: "string" }, minItems: 1 },
    owner: { type: "object", properties: { id: { type: "string" } }, required: ["id"], additionalProperties: false },
    id: { type: ["string", "number"] },
    note: { type: ["string", "null"] },
  },
  required: ["name", "count", "whole", "color", "tags", "owner", "id", "note"],
};

test("zod 4: an object's JSON Schema comes from zod's Standard JSON Schema", () => {
  const result = toolIn(z4.object(zod4Fields(z4)));
  assert.equal(result.kind, "zod4");
  assert.deepEqual(result.jsonSchema, ZOD4_INPUT);
  // The same as zod's own z.toJSONSchema, without $schema.
  const { $schema, ...own } = z4.toJSONSchema(z4.object(zod4Fields(z4)), { io: "input" });
  assert.equal($schema, "https://json-schema.org/draft/2020-12/schema");
  assert.deepEqual(result.jsonSchema, plain(own));
  const output = toolOut(z4.object(zod4Fields(z4))).jsonSchema;
  assert.deepEqual(output.required, ["name", "count", "whole", "nick", "size", "color", "tags", "owner", "id", "note"].filter((k) => k !== "nick"));
  assert.equal(output.additionalProperties, false);
});

test("zod 4: parse applies defaults and transforms and names failing paths", async () => {
  const schema = z4.object({ a: z4.string(), b: z4.number(), size: z4.number().default(3), tags: z4.array(z4.string()).optional(), word: z4.string().transform((s) => s.toUpperCase()) });
  const result = toolIn(schema);
  assert.deepEqual(plain(await result.parse({ a: "x", b: 1, word: "hi" })), { ok: true, value: { a: "x", b: 1, size: 3, word: "HI" } });
  const bad = await result.parse({ a: "x", b: "2", tags: ["ok", 3], word: "w" });
  assert.deepEqual(plain(bad), {
    ok: false,
    message: "input.b: Invalid input: expected number, received string; input.tags[1]: Invalid input: expected string, received number",
  });
  // A transform: input side is the string, output side is anything.
  assert.deepEqual(result.jsonSchema.properties.word, { type: "string" });
  assert.deepEqual(toolOut(schema).jsonSchema.properties.word, {});
});

test("zod 4: recursion gives $defs and $ref", () => {
  const Node = z4.lazy(() => z4.object({ value: z4.number(), next: Node.optional() }));
  assert.deepEqual(toolIn(z4.object({ head: Node })).jsonSchema, {
    type: "object",
    properties: { head: { $ref: "#/$defs/__schema0" } },
    required: ["head"],
    $defs: { __schema0: { type: "object", properties: { value: { type: "number" }, next: { $ref: "#/$defs/__schema0" } }, required: ["value"] } },
  });
  const Category = z4.object({ name: z4.string(), get children() { return z4.array(Category); } });
  assert.deepEqual(toolIn(Category).jsonSchema, {
    type: "object",
    properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#" } } },
    required: ["name", "children"],
  });
});

test("zod 4: types without a JSON form are refused naming the path", () => {
  assert.throws(() => schemas.toolSchema(z4.object({ service: z4.function() }), "tool deploy_status: parameters", "input"),
    { name: "TypeError", message: "tool deploy_status: parameters.service: a zod function schema has no JSON Schema" });
  assert.throws(() => toolIn(z4.object({ a: z4.array(z4.object({ when: z4.date() })) })),
    { name: "TypeError", message: `${WHERE}.a[].when: a zod date schema has no JSON Schema` });
  assert.throws(() => toolIn(z4.object({ m: z4.map(z4.string(), z4.number()) })),
    { name: "TypeError", message: `${WHERE}.m: a zod map schema has no JSON Schema` });
});

for (const [label, z] of [["zod/mini (4.6)", zm], ["zod 3.25's zod/v4", z3v4]]) {
  const isMini = z === zm;
  /** zod/mini spells methods as functions and checks. */
  const build = isMini
    ? () => z.object({
      name: z.string().check(z.minLength(1), z.maxLength(40)),
      count: z.number(),
      whole: z.int().check(z.gte(0), z.lt(10)),
      nick: z.optional(z.string()),
      size: z._default(z.number(), 3),
      color: z.enum(["red", "green"]),
      tags: z.array(z.string()).check(z.minLength(1)),
      owner: z.strictObject({ id: z.string() }),
      id: z.union([z.string(), z.number()]),
      note: z.nullable(z.string()),
    })
    : () => z.object(zod4Fields(z));

  test(`${label}: converted from _zod.def, matching zod's own generator`, () => {
    const result = toolIn(build());
    assert.equal(result.kind, "zod4");
    const expected = structuredClone(ZOD4_INPUT);
    if (isMini) {
      delete expected.properties.name.description;
      // z.int() is a safe integer; zod bounds it.
      expected.properties.whole = { type: "integer", minimum: 0, exclusiveMaximum: 10 };
    }
    assert.deepEqual(result.jsonSchema, expected);
    const { $schema, ...own } = z.toJSONSchema(build(), { io: "input" });
    if (!isMini) {
      // zod 4.0 does not fold `anyOf` of bare types into a type list.
      own.properties.id = { type: ["string", "number"] };
      own.properties.note = { type: ["string", "null"] };
    }
    assert.deepEqual(result.jsonSchema, plain(own));
  });

  test(`${label}: parse, recursion, transforms and refusals`, async () => {
    const schema = z.object({
      b: z.number(),
      size: isMini ? z._default(z.number(), 3) : z.number().default(3),
      word: isMini ? z.pipe(z.string(), z.transform((s) => s.length)) : z.string().transform((s) => s.length),
    });
    const result = toolIn(schema);
    assert.deepEqual(result.jsonSchema.properties.word, { type: "string" });
    assert.deepEqual(toolOut(schema).jsonSchema.properties.word, {});
    assert.deepEqual(toolOut(schema).jsonSchema.required, ["b", "size", "word"]);
    assert.deepEqual(plain(await result.parse({ b: 1, word: "four" })), { ok: true, value: { b: 1, size: 3, word: 4 } });
    assert.match((await result.parse({ b: "1", word: "w" })).message, /^input\.b: Invalid input: expected number, received string$/);
    const Node = z.lazy(() => z.object({ value: z.number(), next: z.optional(Node) }));
    assert.deepEqual(toolIn(z.object({ head: Node })).jsonSchema.$defs, {
      __schema0: { type: "object", properties: { value: { type: "number" }, next: { $ref: "#/$defs/__schema0" } }, required: ["value"] },
    });
    assert.throws(() => toolIn(z.object({ a: z.object({ when: z.date() }) })),
      { name: "TypeError", message: `${WHERE}.a.when: a zod date schema has no JSON Schema` });
  });
}

test("zod/mini: more types match zod's own generator", () => {
  const cases = [
    zm.object({ e: zm.email(), u: zm.uuid(), d: zm.iso.date(), dt: zm.iso.datetime(), r: zm.string().check(zm.regex(/^a/), zm.regex(/b$/)) }),
    zm.object({ t: zm.tuple([zm.string(), zm.optional(zm.number())]), r: zm.record(zm.string(), zm.number()), l: zm.literal(["a", "b"]), n: zm.number().check(zm.multipleOf(2), zm.gt(1)) }),
    zm.object({ i: zm.intersection(zm.object({ a: zm.string() }), zm.object({ b: zm.string() })), ro: zm.readonly(zm.string()), c: zm.catch(zm.string(), "x"), k: zm.looseObject({ a: zm.string() }), ca: zm.object({}).check() }),
  ];
  for (const io of ["input", "output"]) {
    for (const schema of cases) {
      const { $schema, ...own } = zm.toJSONSchema(schema, { io });
      assert.deepEqual(schemas.toolSchema(schema, WHERE, io).jsonSchema, plain(own), `${io}: ${JSON.stringify(own)}`);
    }
  }
});

// ---- other Standard Schemas -------------------------------------------------------

test("valibot: validates; a bare schema gives no JSON Schema, a Standard JSON Schema wrapper does", async () => {
  const schema = v.object({ a: v.string(), b: v.optional(v.number(), 3), tags: v.array(v.string()) });
  assert.equal(schemas.kindOf(schema), "standard");
  assert.throws(() => toolIn(schema), {
    name: "TypeError",
    message: `${WHERE}: a valibot schema gives no JSON Schema (it has no "~standard".jsonSchema and no toJsonSchema() method); ` +
      "pass a JSON Schema object instead, or a schema that implements Standard JSON Schema " +
      "(for valibot: toStandardJsonSchema(schema) from @valibot/to-json-schema)",
  });
  const result = toolIn(toStandardJsonSchema(schema));
  assert.equal(result.kind, "standard");
  assert.deepEqual(result.jsonSchema, {
    type: "object",
    properties: { a: { type: "string" }, b: { type: "number", default: 3 }, tags: { type: "array", items: { type: "string" } } },
    required: ["a", "tags"],
  });
  assert.deepEqual(plain(await result.parse({ a: "x", tags: [] })), { ok: true, value: { a: "x", b: 3, tags: [] } });
  assert.deepEqual(plain(await result.parse({ a: 1, tags: ["x", 2] })), {
    ok: false,
    message: "input.a: Invalid type: Expected string but received 1; input.tags[1]: Invalid type: Expected string but received 2",
  });
});

test("arktype: validates and gives its JSON Schema through Standard JSON Schema", async () => {
  const schema = type({ a: "string", "b?": "number", tags: "string[]" });
  const result = toolIn(schema);
  assert.equal(result.kind, "standard");
  assert.deepEqual(result.jsonSchema, {
    type: "object",
    properties: { a: { type: "string" }, b: { type: "number" }, tags: { type: "array", items: { type: "string" } } },
    required: ["a", "tags"],
  });
  assert.deepEqual(plain(await result.parse({ a: "x", tags: [] })), { ok: true, value: { a: "x", tags: [] } });
  assert.deepEqual(plain(await result.parse({ a: 1, tags: ["x", 2] })), {
    ok: false,
    message: "input.a: a must be a string (was a number); input.tags[1]: tags[1] must be a string (was a number)",
  });
  // A morph: the input side is the string it parses, the output side the number.
  const parsed = type({ n: "string.numeric.parse" });
  assert.equal(toolIn(parsed).jsonSchema.properties.n.type, "string");
  assert.deepEqual(toolOut(parsed).jsonSchema.properties.n, { type: "number" });
  assert.deepEqual(plain(await toolIn(parsed).parse({ n: "12" })), { ok: true, value: { n: 12 } });
});

test("a Standard Schema without jsonSchema falls back to toJsonSchema(), then refuses", async () => {
  const standard = { version: 1, vendor: "acme", validate: (value) => (typeof value === "object" ? { value } : { issues: [{ message: "bad", path: [{ key: "x" }] }] }) };
  const withMethod = { "~standard": standard, toJsonSchema: () => ({ type: "object", properties: { x: { type: "string" } } }) };
  const result = toolIn(withMethod);
  assert.deepEqual(result.jsonSchema, { type: "object", properties: { x: { type: "string" } } });
  assert.deepEqual(plain(await result.parse(5)), { ok: false, message: "input.x: bad" });
  assert.throws(() => toolIn({ "~standard": standard }), { message: /^tool add: inputSchema: a acme schema gives no JSON Schema/ });
  const async = { "~standard": { ...standard, validate: async (value) => ({ value: { got: value } }), jsonSchema: { input: () => ({ type: "object" }), output: () => { throw new Error("no output form"); } } } };
  assert.deepEqual(plain(await toolIn(async).parse(1)), { ok: true, value: { got: 1 } });
  assert.throws(() => toolOut(async), { name: "TypeError", message: "tool add: outputSchema: acme could not give a JSON Schema: no output form" });
});

test("tampered built-ins do not change the results", async () => {
  const saved = { push: Array.prototype.push, keys: Object.keys, stringify: JSON.stringify };
  try {
    Array.prototype.push = () => { throw new Error("push"); };
    Object.keys = () => { throw new Error("keys"); };
    JSON.stringify = () => { throw new Error("stringify"); };
    const result = toolIn({ type: "object", properties: { a: { type: "string" } } });
    assert.equal(result.jsonSchema.properties.a.type, "string");
    const zod3Result = toolIn(z3.object({ a: z3.string().min(2) }));
    assert.equal(zod3Result.jsonSchema.properties.a.minLength, 2);
  } finally {
    Array.prototype.push = saved.push;
    Object.keys = saved.keys;
    JSON.stringify = saved.stringify;
  }
});
