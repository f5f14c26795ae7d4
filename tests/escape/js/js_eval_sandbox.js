// attack: use eval and indirect eval to reach another global
// category: js/host objects
// expect: kind=ok
// expect-value: true
const g1 = (0, eval)("globalThis"); const g2 = eval("this"); return g1 === globalThis && (g2 === undefined || g2 === globalThis);
