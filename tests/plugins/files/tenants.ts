// Seed 003's form, for tests/mcp/test_files.py: tools whose work outlives or overlaps
// other calls, to show that `host.workspace` and `host.llm` act for the call whose code
// is running, never for another call running at the same time.

/** What code left running after its call reported, in order. */
const left: string[] = [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

globalThis.tools.read_after = {
  description: "Waits, then reads a file of the calling agent's workspace.",
  parameters: { type: "object", properties: { path: { type: "string" }, ms: { type: "number" } }, required: ["path", "ms"] },
  handler: async (input: { path: string; ms: number }) => {
    await sleep(input.ms);
    return { text: await host.workspace!.read({ path: input.path }) };
  },
};

globalThis.tools.write_later = {
  description: "Answers at once, and writes a file of the workspace and asks the model a little later.",
  parameters: { type: "object", properties: { path: { type: "string" }, ms: { type: "number" } }, required: ["path", "ms"] },
  handler: (input: { path: string; ms: number }) => {
    setTimeout(async () => {
      for (const attempt of [
        () => host.workspace!.write({ path: input.path, content: "written late" }),
        () => host.llm!({ prompt: "asked late" }),
      ]) {
        try {
          await attempt();
          left.push("served");
        } catch (e) {
          left.push((e as Error).message);
        }
      }
    }, input.ms);
    return "answered";
  },
};

globalThis.tools.sleep_then_write = {
  description: "Sleeps, then writes a file of the workspace (its call may be given up meanwhile).",
  parameters: { type: "object", properties: { path: { type: "string" }, ms: { type: "number" } }, required: ["path", "ms"] },
  handler: async (input: { path: string; ms: number }) => {
    await sleep(input.ms);
    try {
      await host.workspace!.write({ path: input.path, content: "written after sleeping" });
      left.push("served");
    } catch (e) {
      left.push((e as Error).message);
    }
    return "woke";
  },
};

globalThis.tools.what_was_left = {
  description: "What the late work reported, oldest first.",
  parameters: { type: "object", properties: {} },
  handler: () => left.splice(0),
};
