// Seed 003's form (globalThis.tools.<name> = { description, parameters, handler }) with
// the host's model calls: host.llm, host.decide, host.session.llm. The tests give these
// tools to codemode as a plugin; the model is the MCP client's (sampling).

globalThis.tools.summarize = {
  description: "Summarize a text in one sentence with the agent's model.",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  handler: async (input: { text: string }) => {
    const answer = await host.llm({ system: "Summarize in one sentence.", prompt: input.text, maxTokens: 60 });
    return { summary: answer.text, model: answer.model, stopReason: answer.stopReason };
  },
};

globalThis.tools.triage = {
  description: "Decide whether a message is urgent.",
  parameters: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
  handler: async (input: { message: string }) => {
    const choice = await host.decide(`Is this message urgent? ${input.message}`, ["urgent", "later"]);
    return { choice };
  },
};

globalThis.tools.reply = {
  description: "Draft a reply in the calling chat's model.",
  parameters: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
  handler: async (input: { message: string }) => {
    const answer = await host.session!.llm({
      messages: [
        { role: "user", content: "Hello" },
        { role: "assistant", content: "Hi, how can I help?" },
        { role: "user", content: input.message },
      ],
    });
    return answer.text;
  },
};

globalThis.tools.session_member = {
  description: "Reads one member of host.session (or host.media when name is media).",
  parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
  handler: ({ name }: { name: string }) => {
    try {
      const value = name === "media" ? host.media : (host.session as Record<string, unknown>)[name];
      return typeof value;
    } catch (e) {
      return (e as Error).message;
    }
  },
};
