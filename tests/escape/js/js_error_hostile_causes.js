// attack: an AggregateError whose errors and cause are values that cannot be described
// category: js/hostile values
// expect: kind=error
const e = new AggregateError([Symbol(), Object.create(null), new Proxy({}, { get() { throw 1; } })], "many", { cause: Symbol("cause") });
Object.defineProperty(e, "stack", { get() { throw Symbol("stack"); } });
throw e;
