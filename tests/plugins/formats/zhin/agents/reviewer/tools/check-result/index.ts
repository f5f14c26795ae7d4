import { defineAgentTool } from '@zhin.js/tool';
export default defineAgentTool({ description: 'Private to the reviewer agent', execute: async () => 'checked' });
