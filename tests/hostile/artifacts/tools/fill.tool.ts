import { defineTool } from "@plico-ai/sdk";

// Writes `count` text artifacts of `mib` MiB each to the session (plico's ctx.artifacts),
// and says how many were kept and why the first refused one was not.
export default defineTool({
  name: "fill",
  description: "Fills the session's artifacts.",
  inputSchema: { type: "object", properties: { count: { type: "number" }, mib: { type: "number" } }, required: ["count", "mib"] },
  capabilities: ["artifact:write"],
  approval: { required: false },
  handler: async ({ count, mib }: { count: number; mib: number }, ctx: any) => {
    const body = "x".repeat(mib << 20);
    let kept = 0;
    let refused: string | null = null;
    for (let i = 0; i < count; i++) {
      try {
        await ctx.artifacts.write(`fill/${i}.bin`, body);
        kept++;
      } catch (e) {
        refused ??= (e as Error).message;
      }
    }
    return { kept, refused };
  },
});
