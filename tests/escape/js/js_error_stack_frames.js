// attack: walk callers with arguments.callee.caller from a tool callback
// category: js/host objects
// expect: kind=ok
// expect-value: "null or throws"
function probe() { try { const c = probe.caller; return c === null || c === undefined ? "null or throws" : typeof c; } catch { return "null or throws"; } }
return probe();
