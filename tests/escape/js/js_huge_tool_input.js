// attack: call a tool with a 33 MiB input, more than a frame should carry
// category: js/hostile values
// expect: kind=ok
// expect-value: true
// memory-mib: 256
// cpu-step-ms: 10000
// (the attack is the size, not CPU time: a loaded machine must not turn it into a CPU-limit outcome)
try {
  await tools.math.add({ a: "x".repeat(33 * 1024 * 1024), b: 1 });
  return "sent";
} catch (e) {
  return e.message.includes("more than the 32.0 MiB of tool data a program may have in flight");
}
