// attack: an endless chain of microtasks that never yields to the host
// category: js/exhaustion
// expect: kind=cpu_limit
for (;;) await null;
