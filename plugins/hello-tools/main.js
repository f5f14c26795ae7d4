// The JavaScript plugin example: two tools registered with api.tools.register.
// It runs in its own sandboxed runtime; codemode calls run(input, ctx) for each call.
import { countWords } from "./words.js";

export function activate(api) {
  api.tools.register({
    name: "greet",
    title: "Greet someone",
    description: "Returns a greeting for `name`, in English or Norwegian.",
    inputSchema: {
      type: "object",
      properties: {
        name: { type: "string", description: "Who to greet" },
        language: { enum: ["en", "no"], description: "Defaults to en" },
      },
      required: ["name"],
    },
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    run({ name, language = "en" }) {
      return language === "no" ? `Hei, ${name}!` : `Hello, ${name}!`;
    },
  });

  api.tools.register({
    name: "word-count",
    description: "Counts the words and lines of a text, and lists its most frequent words.",
    inputSchema: {
      type: "object",
      properties: { text: { type: "string" }, top: { type: "integer", minimum: 1, maximum: 20, description: "How many frequent words (default 3)" } },
      required: ["text"],
    },
    outputSchema: {
      type: "object",
      properties: {
        words: { type: "integer" },
        lines: { type: "integer" },
        top: { type: "array", items: { type: "object", properties: { word: { type: "string" }, count: { type: "integer" } }, required: ["word", "count"] } },
      },
      required: ["words", "lines", "top"],
    },
    annotations: { readOnlyHint: true },
    run({ text, top = 3 }, ctx) {
      ctx.signal.throwIfAborted();
      return countWords(text, top);
    },
  });
}
