// attack: flood the console with 10 MB
// category: js/exhaustion
// expect: kind=ok
// expect-value: "flooded"
const line = "x".repeat(999); for (let i = 0; i < 10000; i++) console.log(line); return "flooded";
