// attack: a 30 MiB error message in a 64 MiB program, so that describing it exhausts memory outside the engine's heap
// category: js/memory
// expect: kind=memory_limit
throw new Error("x".repeat(30 * 1024 * 1024));
