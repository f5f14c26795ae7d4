// attack: throw a Proxy whose every trap throws (getPrototypeOf, get, toPrimitive)
// category: js/hostile values
// expect: kind=error
const trap = () => { throw Symbol("trap"); };
throw new Proxy({}, { get: trap, getPrototypeOf: trap, has: trap, ownKeys: trap, getOwnPropertyDescriptor: trap });
