// attack: spin forever in JavaScript
// category: js/exhaustion
// expect: kind=cpu_limit
for (;;) {}
