import { defineAgentTool } from '@zhin.js/tool';

export default defineAgentTool<{ short: string }>({
  description: 'Check that a short link has the form the shortener makes',
  inputSchema: {
    type: 'object',
    properties: { short: { type: 'string', description: 'The short link' } },
    required: ['short'],
  },
  requiresApproval: 'never',
  async execute({ short }) {
    return /^https:\/\/s\.example\/[0-9a-z]+$/.test(short) ? 'ok' : 'not a short link';
  },
});
