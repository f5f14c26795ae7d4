// attack: pass a Proxy whose traps run during serialisation of a tool input
// category: js/prototype pollution
// expect: kind=ok
// expect-value: "3"
let hits = 0;
const input = new Proxy({ a: 1, b: 2 }, { get(t, k, r) { hits++; return Reflect.get(t, k, r); } });
const r = await tools.math.add(input);
if (hits === 0) throw new Error("traps did not run");
return r;
