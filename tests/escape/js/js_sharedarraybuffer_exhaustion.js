// attack: allocate SharedArrayBuffers (outside the engine's heap accounting) until the OS refuses, and catch what is thrown
// category: js/memory
// expect: kind=memory_limit
const kept = [];
try {
  for (;;) kept.push(new SharedArrayBuffer(16 * 1024 * 1024));
} catch (e) {
  return typeof e;
}
