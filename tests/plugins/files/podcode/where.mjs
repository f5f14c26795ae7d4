// A Podcode plugin whose tool reports the user's primary workspace directory (ctx.mainCwd).
export default {
  id: "where",
  server: async () => ({
    tool: [
      {
        id: "main_cwd",
        description: "Says which folder is the user's primary workspace.",
        parameters: { type: "object", properties: {} },
        execute: async (_args, ctx) => ({ title: "cwd", output: String(ctx.mainCwd) }),
      },
    ],
  }),
};
