// attack: allocate objects until memory runs out
// category: js/exhaustion
// expect: kind=memory_limit
const keep = []; for (;;) keep.push({ a: [1, 2, 3], b: "x" + keep.length });
