// attack: tamper with the tools object and its plugins
// category: js/prototype pollution
// expect: kind=ok
// expect-value: ["3",true]
let threw = false;
try { "use strict"; tools.math.add = () => "forged"; } catch { threw = true; }
try { Object.defineProperty(tools, "math", { value: {} }); } catch { threw = true; }
return [await tools.math.add({ a: 1, b: 2 }), threw];
