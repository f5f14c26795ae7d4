// Seed 000's activate(api) with api.models.prompt and the document's own run_command
// (api.host.kernel), unchanged.
export function activate(api: any) {
  api.tools.register({
    name: "ask",
    description: "Asks the agent's model a question and answers with its reply.",
    inputSchema: { type: "object", properties: { question: { type: "string" } }, required: ["question"] },
    run: async ({ question }: { question: string }, ctx: any) => {
      const sub = await ctx.subagent.start({ title: "Asking", prompt: question });
      const reply = await api.models.prompt({ prompt: question, model: "gpt-5.5", maxTokens: 100, subagent: sub });
      await sub.end({ status: "completed", summary: reply.text });
      return { text: reply.text, model: reply.model };
    },
  });

  api.tools.register({
    name: "run_command",
    description: "Runs one of the app's commands by id (see list_commands).",
    inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
    run: async ({ id }) => {
      const { ran } = await api.host.kernel("run_command", { id });
      return ran ? `ran ${id}` : `${id} did not run`;
    },
  });
}
