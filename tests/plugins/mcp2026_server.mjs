// mcp2026_server.mjs: an MCP server built on the official TypeScript SDK v2
// that speaks ONLY protocol revision 2026-07-28 (2025-era clients, i.e. an
// `initialize` opening, are rejected). codemode's tests use it as a plugin to
// check codemode's 2026 client side against the reference implementation.
//
// Usage:  node mcp2026_server.mjs stdio
//         node mcp2026_server.mjs http PORT     (PORT 0 picks a free one; prints
//                                                "listening on PORT" to stderr; path /mcp)
// Env:    COUNT_FILE=path  appends a line "list" to path for every tools/list received.
//
// Tools:  echo {text}      -> "echo: <text>"
//         ask {question}   -> asks the question by multi-round-trip elicitation
//                             (input_required + signed requestState), then
//                             "answered: <answer>" or "declined"
//         whoami           -> JSON {clientInfo, protocolVersion} from the request's _meta
//         grow {name}      -> adds a tool <name> ("hello from <name>") and announces
//                             notifications/tools/list_changed to subscriptions/listen streams
// tools/list results carry the cache hint ttlMs 60000.
//
// Running it: ESM ignores NODE_PATH, so bare imports resolve only from a node_modules
// beside (or above) the file's real path. Copy it next to the installed SDK:
//   cp tests/plugins/mcp2026_server.mjs target/ts-sdk/ && node target/ts-sdk/mcp2026_server.mjs stdio
// (or symlink it there and run `node --preserve-symlinks-main target/ts-sdk/mcp2026_server.mjs`).
// target/ts-sdk/node_modules needs @modelcontextprotocol/server 2.4.0, @modelcontextprotocol/node
// 2.1.2 and zod 4. As a codemode plugin:
//   [[plugin]] name = "ts2026" kind = "mcp" command = "node" args = ["<abs>/target/ts-sdk/mcp2026_server.mjs", "stdio"]
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import {
    CLIENT_INFO_META_KEY,
    McpServer,
    PROTOCOL_VERSION_META_KEY,
    createMcpHandler,
    createRequestStateCodec,
    inputRequired,
    inputResponse,
} from '@modelcontextprotocol/server';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import { toNodeHandler } from '@modelcontextprotocol/node';
import * as z from 'zod';

const [mode, portArg] = process.argv.slice(2);
if (mode !== 'stdio' && mode !== 'http') {
    console.error('usage: node mcp2026_server.mjs stdio | http PORT');
    process.exit(2);
}

// Signs the requestState `ask` hands out; a random key per process is enough
// because one process serves every round of a flow.
const stateCodec = createRequestStateCodec({ key: crypto.getRandomValues(new Uint8Array(32)), ttlSeconds: 600 });
const ANSWER_SCHEMA = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };

// Tools added by `grow`, shared by every server instance of this process (over
// HTTP each request gets a fresh instance from the factory).
const grown = new Set();
let notifier; // the HTTP handler's notifier; unset on stdio
const text = (t) => ({ content: [{ type: 'text', text: t }] });

function addGrown(server, name) {
    server.registerTool(name, { description: `Added by grow: says hello` }, async () => text(`hello from ${name}`));
}

function buildServer() {
    const server = new McpServer(
        { name: 'mcp2026-test-server', version: '1.0.0' },
        {
            capabilities: { tools: { listChanged: true } },
            cacheHints: { 'tools/list': { ttlMs: 60000 } },
            requestState: { verify: stateCodec.verify },
        },
    );
    server.registerTool('echo', { description: 'Echoes the text', inputSchema: z.object({ text: z.string() }) },
        async ({ text: t }) => text(`echo: ${t}`));
    server.registerTool('ask', { description: 'Asks the person a question', inputSchema: z.object({ question: z.string() }) },
        async ({ question }, ctx) => {
            const reply = inputResponse(ctx.mcpReq.inputResponses, 'answer');
            const state = ctx.mcpReq.requestState(); // already verified by the seam
            if (reply.kind === 'elicit' && state?.question === question) {
                return text(reply.action === 'accept' ? `answered: ${reply.content?.answer}` : 'declined');
            }
            return inputRequired({
                inputRequests: { answer: inputRequired.elicit({ message: question, requestedSchema: ANSWER_SCHEMA }) },
                requestState: await stateCodec.mint({ question }),
            });
        });
    server.registerTool('whoami', { description: "The request's clientInfo name and protocol version" },
        async (ctx) => text(JSON.stringify({
            clientInfo: ctx.mcpReq.envelope?.[CLIENT_INFO_META_KEY]?.name ?? null,
            protocolVersion: ctx.mcpReq.envelope?.[PROTOCOL_VERSION_META_KEY] ?? null,
        })));
    server.registerTool('grow', { description: 'Adds a tool', inputSchema: z.object({ name: z.string() }) },
        async ({ name }) => {
            if (!grown.has(name)) {
                grown.add(name);
                if (notifier) notifier.toolsChanged(); // HTTP: publish on the handler's event bus
                else addGrown(server, name); // stdio: the pinned instance announces it (routed to listen streams)
            }
            return text(`grew ${name}`);
        });
    for (const name of grown) addGrown(server, name);
    return server;
}

function countList(message) {
    if (process.env.COUNT_FILE && message?.method === 'tools/list' && message.id !== undefined) {
        appendFileSync(process.env.COUNT_FILE, 'list\n');
    }
}

if (mode === 'stdio') {
    const transport = new StdioServerTransport();
    const start = transport.start.bind(transport);
    transport.start = async () => { // count tools/list on the way in
        const deliver = transport.onmessage;
        transport.onmessage = (message, extra) => { countList(message); deliver?.(message, extra); };
        return start();
    };
    serveStdio(buildServer, { legacy: 'reject', transport, onerror: (e) => console.error('[mcp2026]', e.message) });
} else {
    const handler = createMcpHandler(buildServer, { legacy: 'reject', onerror: (e) => console.error('[mcp2026]', e.message) });
    notifier = handler.notify;
    const serve = toNodeHandler(handler);
    const http = createServer(async (req, res) => {
        if (new URL(req.url, 'http://x').pathname !== '/mcp') {
            res.writeHead(404).end();
            return;
        }
        let body;
        if (req.method === 'POST') {
            const chunks = [];
            for await (const chunk of req) chunks.push(chunk);
            try {
                body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {
                res.writeHead(400, { 'content-type': 'application/json' })
                    .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }));
                return;
            }
            for (const message of [body].flat()) countList(message);
        }
        await serve(req, res, body);
    });
    http.listen(Number(portArg ?? 0), '127.0.0.1', () => console.error(`listening on ${http.address().port}`));
}
