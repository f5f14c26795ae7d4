// attack: block the thread with SharedArrayBuffer + Atomics.wait
// category: js/exhaustion
// expect: kind=cpu_limit
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
