// attack: reach Deno, Deno.core or its ops from the global scope
// category: js/host objects
// expect: kind=ok
// expect-value: ["undefined","undefined","undefined"]
return [typeof Deno, typeof globalThis.__bootstrap, typeof Object.getOwnPropertyDescriptor(globalThis, "Deno")];
