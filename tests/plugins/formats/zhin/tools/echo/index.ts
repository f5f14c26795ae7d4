// tools/echo/index.ts
import { defineAgentTool } from '@zhin.js/tool';
import { z } from 'zod';

export default defineAgentTool<{ message: string; times: number }>({
  description: 'Echo a message back',
  inputSchema: z.object({
    message: z.string().min(1).describe('What to echo'),
    times: z.number().int().min(1).max(5).default(1),
  }),
  requiresApproval: 'never',
  async execute({ message, times }, context) {
    const prefix = context.config.prefix ?? '';
    return `${prefix}echo: ${Array(times).fill(message).join(' ')}`;
  },
});
