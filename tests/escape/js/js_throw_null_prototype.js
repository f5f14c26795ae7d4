// attack: throw an object without a prototype (no toString, no toPrimitive)
// category: js/hostile values
// expect: kind=error
throw Object.create(null);
