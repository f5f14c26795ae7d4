import { defineTool } from "@plico-ai/sdk";

export default defineTool({
  name: "whoami",
  description: "Says what the tool context holds.",
  inputSchema: { type: "object", properties: {} },
  capabilities: [],
  approval: { required: false },
  handler: (_input: object, ctx: any) => {
    let artifacts: string;
    try {
      artifacts = String(ctx.artifacts);
    } catch (e) {
      artifacts = (e as Error).message;
    }
    return { context: ctx.context ?? null, key: ctx.idempotencyKey, aborted: ctx.signal.aborted, artifacts, token: process.env.PLICO_TOKEN ?? null };
  },
});
