// attack: species constructors and Symbol.for hooks on arrays and promises
// category: js/prototype pollution
// expect: kind=ok
// expect-value: "3"
class Evil extends Array { static get [Symbol.species]() { return function () { throw new Error("species ran in the host"); }; } }
Symbol.for("nodejs.util.inspect.custom");
const p = Promise.resolve(1); p.constructor = { [Symbol.species]: function () { throw new Error("hijacked"); } };
return await tools.math.add({ a: Evil.from([1])[0], b: 2 });
