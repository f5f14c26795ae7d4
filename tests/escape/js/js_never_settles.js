// attack: wait for a promise nothing can settle, to hold a worker forever
// category: js/exhaustion
// expect: kind=stuck
await new Promise(() => {});
