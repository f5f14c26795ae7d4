// attack: replace built-ins the runtime's own code might use, then use console, tools and error hints
// category: js/host objects
// expect: kind=ok
// expect-value: {"sum":"3","log":true,"hint":true}
Array.prototype.push = () => { throw 1; };
Array.prototype[Symbol.iterator] = function* () { throw 2; };
String.prototype.toLowerCase = null;
String.prototype.replace = () => { throw 3; };
String.prototype[Symbol.split] = () => { throw 4; };
Object.defineProperty(Object.prototype, "get", { get() { throw 5; }, configurable: true });
Object.defineProperty(Object.prototype, "value", { get() { throw 6; }, configurable: true });
RegExp.prototype.exec = () => { throw 7; };
JSON.stringify = () => { throw 8; };
const sum = await tools.math.add({ a: 1, b: 2 });
console.log("still logging", [1, 2], { a: 1 });
let hint = false;
try {
  await tools.math.ad({});
} catch (e) {
  hint = e.message.includes("Did you mean tools.math.add");
}
globalThis.Object = null;
return { sum, log: true, hint };
