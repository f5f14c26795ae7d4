// attack: recurse until the native stack overflows
// category: js/exhaustion
// expect: kind=error
function f() { return f() + 1; } return f();
