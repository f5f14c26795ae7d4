import { defineAgentTool } from '@zhin.js/tool';

export default defineAgentTool<{ url: string }>({
  description: 'Normalize a URL: lower-case host, no tracking parameters, no trailing slash',
  inputSchema: {
    type: 'object',
    properties: { url: { type: 'string', description: 'The URL as written' } },
    required: ['url'],
  },
  requiresApproval: 'never',
  async execute({ url }) {
    const parsed = new URL(url);
    for (const key of [...parsed.searchParams.keys()]) {
      if (key.startsWith('utm_')) parsed.searchParams.delete(key);
    }
    return parsed.toString().replace(/\/$/, '');
  },
});
