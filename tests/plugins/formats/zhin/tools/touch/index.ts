import { defineAgentTool } from '@zhin.js/tool';
import { z } from 'zod';

// Touches a member of the capability context; codemode names what it does not offer.
// It only reads, and says so: the default approval ('on-risk') does not ask for it.
export default defineAgentTool({
  description: 'Reads one member of the tool context by name',
  inputSchema: z.object({ member: z.string() }),
  annotations: { readOnlyHint: true },
  hidden: true,
  execute: async ({ member }: { member: string }, context: Record<string, unknown>) => {
    try {
      const value = context[member];
      return `${member}: ${typeof value}`;
    } catch (e) {
      return (e as Error).message;
    }
  },
});
