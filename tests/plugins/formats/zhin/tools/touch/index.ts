import { defineAgentTool } from '@zhin.js/tool';
import { z } from 'zod';

// Touches a member of the capability context; codemode names what it does not offer.
export default defineAgentTool({
  description: 'Reads one member of the tool context by name',
  inputSchema: z.object({ member: z.string() }),
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
