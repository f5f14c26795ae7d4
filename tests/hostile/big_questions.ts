// Seed 003's form, for tests/hostile/run.py: a tool whose small input makes a large
// question to the client's model (host.llm), for the sampling flood.

globalThis.tools.ask_big = {
  description: "Asks the client's model a question of `bytes` bytes.",
  parameters: { type: "object", properties: { bytes: { type: "number" } }, required: ["bytes"] },
  handler: async (input: { bytes: number }) => {
    const answer = await host.llm({ prompt: "q".repeat(input.bytes) });
    return answer.text;
  },
};
