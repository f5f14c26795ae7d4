// attack: reach the engine's own SharedArrayBuffer constructor through a buffer's prototype, and exhaust memory with it and with slice()
// category: js/memory
// expect: kind=memory_limit
const Raw = Object.getPrototypeOf(new Int8Array(new SharedArrayBuffer(8)).buffer).constructor;
const kept = [];
try {
  for (;;) {
    const b = new Raw(16 * 1024 * 1024);
    kept.push(b, b.slice(0));
  }
} catch (e) {
  return typeof e;
}
