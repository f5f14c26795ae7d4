import { defineAgentTool } from '@zhin.js/tool';

export default defineAgentTool({
  description: 'Restart the bot',
  permissions: ['role(master)'],
  execute: async () => 'restarted',
});
