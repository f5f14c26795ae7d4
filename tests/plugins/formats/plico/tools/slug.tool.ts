import { defineTool } from "@plico-ai/sdk";
import { type } from "arktype";
import { slugify } from "./helpers.js";

// An ArkType schema: a Standard Schema that is not zod.
export default defineTool({
  name: "slug",
  description: "Turn a title into a URL slug.",
  inputSchema: type({ title: "string", "maxLength?": "number" }),
  capabilities: ["ticket:write"],
  approval: { required: true, reason: "it publishes the slug" },
  handler: ({ title, maxLength }) => slugify(title, maxLength ?? 40),
});
