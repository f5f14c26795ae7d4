import { defineAgentTool } from '@zhin.js/tool';
import { z } from 'zod';

// No requiresApproval: the default, 'on-risk', asks because the tool is not marked read-only.
export default defineAgentTool({
  description: 'Forget everything the bot remembers about a user',
  inputSchema: z.object({ user: z.string() }),
  annotations: { destructiveHint: true },
  execute: async ({ user }: { user: string }) => `wiped ${user}`,
});
