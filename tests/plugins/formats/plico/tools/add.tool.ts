import { defineTool } from "@plico-ai/sdk";
import { z } from "zod";

export default defineTool({
  name: "add",
  description: "Add two numbers.",
  inputSchema: z.object({ a: z.number(), b: z.number().default(0) }),
  capabilities: [],
  approval: { required: false },
  handler: ({ a, b }) => a + b,
});
