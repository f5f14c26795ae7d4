export default { event: 'tool.after', handle: async () => {} };
