// attack: pollute Object.prototype (toJSON, then) before a tool call
// category: js/prototype pollution
// expect: kind=ok
// expect-value: "3"
Object.prototype.toJSON = function () { return { a: 999, b: 999 }; };
delete Object.prototype.toJSON;
Object.prototype.polluted = "yes";
const r = await tools.math.add({ a: 1, b: 2 });
return r;
