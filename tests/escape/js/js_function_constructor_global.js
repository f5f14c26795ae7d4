// attack: get the real global through Function('return this') and look for non-language names
// category: js/host objects
// expect: kind=ok
// expect-value: []
const g = Function("return this")();
const language = new Set(Reflect.ownKeys(globalThis).map(String));
return Reflect.ownKeys(g).map(String).filter((k) => !language.has(k));
