// The one program every system runs, and the one tool every peer implements.
//
// codemode's bundled `math.add` answers text: `tools.math.add({ a: 1, b: 2 })` resolves to
// the string "3" (`codemode tools --example-tools` declares `Promise<string>`). The program
// therefore adds the two answers as numbers, and each peer's `math.add` answers the same
// string, so every system runs exactly the same program on the same tool contract.

export const PROGRAM =
  "const [x, y] = await Promise.all([tools.math.add({ a: 1, b: 2 }), tools.math.add({ a: 3, b: 4 })]); " +
  "return { sum: Number(x) + Number(y) };";

// What every system must give back, as JSON text.
export const EXPECTED = '{"sum":10}';

// The host side of `math.add` for every peer: the same contract as codemode's (numbers in,
// the sum as text out), asynchronous like a real tool.
export async function mathAdd(input) {
  const { a, b } = input ?? {};
  if (typeof a !== "number" || typeof b !== "number") throw new Error("add: `a` and `b` must be numbers");
  return String(a + b);
}

// The program as a guest-side async function body whose completion is its result as JSON
// text (JSON crosses every boundary the same way codemode's result does).
export function wrapped(program = PROGRAM) {
  return `(async () => JSON.stringify(await (async () => {\n${program}\n})()))()`;
}
