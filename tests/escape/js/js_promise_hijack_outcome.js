// attack: make Promise.prototype.constructor and then throw Symbols so the runtime's own promise handling fails
// category: js/hostile values
// expect: kind=error
Object.defineProperty(Promise.prototype, "constructor", { get() { throw Symbol("species"); } });
Promise.prototype.then = function () { throw Symbol("then"); };
return 1;
