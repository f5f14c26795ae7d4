// attack: double a string until it cannot grow
// category: js/exhaustion
// expect: kind=error
let s = "x"; for (;;) s += s;
