import * as Effect from "effect/Effect";
import * as z from "zod";
import { Tools, runPlugin } from "convergence/effect";
import { words } from "./words.js";

const program = Effect.gen(function* () {
  const tools = yield* Tools;
  yield* tools.register({
    name: "word-count",
    description: "Counts the words of a text.",
    input: z.object({ text: z.string(), minLength: z.number().int().min(1).default(1) }),
    output: z.object({ words: z.number() }),
    run: ({ text, minLength }: { text: string; minLength: number }) =>
      Effect.succeed({ words: words(text).filter((w) => w.length >= minLength).length }),
  });
  yield* tools.register({
    name: "slow-echo",
    description: "Echoes after sleeping; the call's signal interrupts the sleep.",
    input: z.object({ text: z.string(), ms: z.number().default(10) }),
    run: ({ text, ms }: { text: string; ms: number }) =>
      Effect.gen(function* () {
        yield* Effect.sleep(ms);
        return `echo: ${text}`;
      }),
  });
  yield* tools.register({
    name: "broken-output",
    description: "Returns a value that its output schema refuses.",
    input: z.object({}),
    output: z.object({ words: z.number() }),
    run: () => Effect.succeed({ words: "many" } as unknown as { words: number }),
  });
});

export const activate = runPlugin(program);
