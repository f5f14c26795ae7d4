import { defineAgentTool } from '@zhin.js/tool';
import { shorten } from './client';

export default defineAgentTool<{ url: string }>({
  description: 'Shorten a URL for a chat message',
  inputSchema: {
    type: 'object',
    properties: { url: { type: 'string', description: 'The long URL' } },
    required: ['url'],
  },
  requiresApproval: 'never',
  async execute({ url }) {
    return shorten(url);
  },
});
