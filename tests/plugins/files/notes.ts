// Seed 003's own `save_note` example (reference document 003, "a tool that saves a note
// into the agent's workspace"), unchanged, and tools that read and list what it saved
// and reach any path, for tests/mcp/test_files.py.

globalThis.tools.save_note = {
  description: "Save a short note into the agent's workspace under notes/.",
  parameters: {
    type: "object",
    properties: { title: { type: "string" }, text: { type: "string" } },
    required: ["title", "text"],
  },
  handler: async (input: { title: string; text: string }) => {
    const path = `notes/${input.title.replace(/[^a-z0-9-]+/gi, "-").toLowerCase()}.md`;
    await host.workspace!.write({ path, content: input.text });
    return { saved: path };
  },
};

globalThis.tools.read_note = {
  description: "Read a file of the agent's workspace.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  handler: async (input: { path: string }) => ({ text: await host.workspace!.read({ path: input.path }) }),
};

globalThis.tools.list_notes = {
  description: "List a folder of the agent's workspace.",
  parameters: { type: "object", properties: { path: { type: "string" } } },
  handler: async (input: { path?: string }) => ({ entries: await host.workspace!.list({ path: input.path ?? "" }) }),
};

globalThis.tools.write_file = {
  description: "Write any path of the agent's workspace.",
  parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] },
  handler: async (input: { path: string; content: string }) => await host.workspace!.write(input),
};
