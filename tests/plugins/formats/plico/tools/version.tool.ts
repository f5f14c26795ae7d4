import { defineTool } from "@plico-ai/sdk";
import { coerce, valid } from "semver"; // CommonJS, named exports
import ms from "ms"; // CommonJS, default export

export default defineTool({
  name: "version",
  description: "Reads a version number out of text, and a duration.",
  inputSchema: { type: "object", properties: { text: { type: "string" }, duration: { type: "string" } }, required: ["text"] },
  capabilities: [],
  approval: { required: false },
  handler: ({ text, duration }: { text: string; duration?: string }) => ({
    version: valid(coerce(text)),
    ms: ms(duration ?? "2 days"),
  }),
});
