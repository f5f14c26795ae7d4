import { defineTool } from "@plico-ai/sdk";

// Keeps a PNG and a CSV as artifacts of the session (plico's ctx.artifacts), reads the
// CSV back and lists what the session holds.
export default defineTool({
  name: "chart",
  description: "Draws a chart and keeps it, with its data, as artifacts.",
  inputSchema: { type: "object", properties: { rows: { type: "number" } }, required: ["rows"] },
  capabilities: ["artifact:write"],
  approval: { required: false },
  handler: async ({ rows }: { rows: number }, ctx: any) => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, rows]);
    const image = await ctx.artifacts.write("charts/chart.png", png, { mimeType: "image/png" });
    const csv = "x,y\n" + Array.from({ length: rows }, (_, i) => `${i},${i * i}`).join("\n");
    await ctx.artifacts.write("charts/data.csv", csv, { mimeType: "text/csv" });
    const readBack = await ctx.artifacts.read("charts/data.csv");
    const bytes = await ctx.artifacts.read("charts/chart.png");
    const listed = await ctx.artifacts.list();
    return { image, readBack, bytes: Array.from(bytes), listed: listed.map((a: any) => `${a.path} ${a.mimeType} ${a.size}`) };
  },
});
