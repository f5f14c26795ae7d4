// attack: replace Promise.prototype.then before calling tools
// category: js/prototype pollution
// expect: kind=ok
// expect-value: "3"
const real = Promise.prototype.then;
Promise.prototype.then = function (a, b) { return real.call(this, a, b); };
return await tools.math.add({ a: 1, b: 2 });
