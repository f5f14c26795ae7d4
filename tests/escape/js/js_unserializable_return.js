// attack: return cycles and functions to crash the host's serialiser
// category: js/exhaustion
// expect: kind=error
const a = { f() {} }; a.self = a; return a;
