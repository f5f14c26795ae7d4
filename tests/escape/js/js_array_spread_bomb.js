// attack: spread a huge array
// category: js/exhaustion
// expect: kind=memory_limit
const a = new Array(2e7).fill(0.5); const b = [...a, ...a, ...a, ...a]; return b.length;
