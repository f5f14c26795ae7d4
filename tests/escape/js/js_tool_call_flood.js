// attack: start 20,000 tool calls at once
// category: js/exhaustion
// expect: kind=tool_call_limit
// cpu-step-ms: 10000
// (the attack is the size, not CPU time: a loaded machine must not turn it into a CPU-limit outcome;
// every call costs the host work, so the program ends at the tool-call limit of 10,000, by name)
const r = await Promise.allSettled(Array.from({ length: 20000 }, (_, i) => tools.math.add({ a: i, b: 0 }))); return r.length;
