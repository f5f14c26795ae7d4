// attack: start 20,000 tool calls at once
// category: js/exhaustion
// expect: kind=ok
// expect-value: 20000
const r = await Promise.allSettled(Array.from({ length: 20000 }, (_, i) => tools.math.add({ a: i, b: 0 }))); return r.length;
