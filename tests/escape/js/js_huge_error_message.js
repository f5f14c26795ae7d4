// attack: throw an Error whose message is 30 MiB, so the outcome would be a huge frame
// category: js/hostile values
// expect: kind=error
// expect-max-output: 40000
// memory-mib: 256
throw new Error("x".repeat(30 * 1024 * 1024));
