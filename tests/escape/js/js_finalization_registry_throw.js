// attack: a FinalizationRegistry callback that throws a Symbol when the engine collects garbage
// category: js/hostile values
// expect: kind=ok
// expect-value: 1
const registry = new FinalizationRegistry(() => { throw Symbol("cleanup"); });
for (let i = 0; i < 1000; i++) registry.register({}, i);
let junk = [];
for (let i = 0; i < 200000; i++) junk.push({ i });
junk = null;
return 1;
