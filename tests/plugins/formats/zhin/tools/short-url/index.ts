import { defineAgentTool } from '@zhin.js/tool';
import { shorten } from './client';

export default defineAgentTool<{ url: string }>({
  description: 'Shorten a URL',
  inputSchema: {
    type: 'object',
    properties: { url: { type: 'string', description: 'The long URL' } },
    required: ['url'],
  },
  requiresApproval: 'once',
  execute: async ({ url }, context) => ({ short: shorten(url, context.config.get().base ?? 'https://s.example') }),
});
