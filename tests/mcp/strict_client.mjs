// strict_client.mjs: drives codemode as an MCP server with the official
// TypeScript SDK v2 client pinned to protocol revision 2026-07-28 (no
// 2025 fallback), to check codemode's 2026 server side against the
// reference implementation.
//
// Usage:  node strict_client.mjs stdio CODEMODE CONFIG   (spawns `CODEMODE mcp --config CONFIG`)
//         node strict_client.mjs http URL                (a running `codemode serve`, URL ends in /mcp)
// Env:    TS_PLUGIN=1  also checks tools.ts2026.ask: CONFIG must have a plugin named
//                      ts2026 running mcp2026_server.mjs, whose question must travel
//                      plugin -> codemode -> this client -> back.
//
// Every elicitation is accepted with {answer: "forty-two"} when the form has an
// `answer` field, else with {}. Prints one JSON line of results; exits 1 with a
// message on the first failed expectation.
//
// Running it: ESM ignores NODE_PATH, so bare imports resolve only from a node_modules
// beside (or above) the file's real path. Copy it next to the installed SDK:
//   cp tests/mcp/strict_client.mjs target/ts-sdk/
//   TS_PLUGIN=1 node target/ts-sdk/strict_client.mjs stdio target/release/codemode CONFIG
// (or symlink it there and run `node --preserve-symlinks-main target/ts-sdk/strict_client.mjs ...`).
// target/ts-sdk/node_modules needs @modelcontextprotocol/client 2.4.0.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { isDeepStrictEqual } from 'node:util';

const [mode, target, config] = process.argv.slice(2);
if (!(mode === 'stdio' && target && config) && !(mode === 'http' && target)) {
    console.error('usage: node strict_client.mjs stdio CODEMODE CONFIG | http URL');
    process.exit(2);
}

const results = { mode, protocolVersion: null, tools: null, asked: [] };
function fail(message) {
    console.log(JSON.stringify({ ...results, ok: false, error: message }));
    console.error(`strict_client: FAILED: ${message}`);
    process.exit(1);
}

const client = new Client({ name: 'strict-ts', version: '1' }, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: { pin: '2026-07-28' } },
});
client.setRequestHandler('elicitation/create', async (request) => {
    const { message, requestedSchema } = request.params;
    results.asked.push(message);
    const hasAnswer = requestedSchema?.properties && 'answer' in requestedSchema.properties;
    return { action: 'accept', content: hasAnswer ? { answer: 'forty-two' } : {} };
});

const transport = mode === 'stdio'
    ? new StdioClientTransport({ command: target, args: ['mcp', '--config', config], stderr: 'inherit' })
    : new StreamableHTTPClientTransport(new URL(target));
try {
    await client.connect(transport);
} catch (error) {
    fail(`connect: ${error.message}`);
}
results.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? null;

// Runs one program through `execute`; returns its text, failing on an error result.
async function execute(label, code) {
    const asked = results.asked.length;
    let result;
    try {
        result = await client.callTool({ name: 'execute', arguments: { code } });
    } catch (error) {
        fail(`${label}: tools/call threw: ${error.message}`);
    }
    const text = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    results[label] = { text, asked: results.asked.length - asked };
    if (result.isError) fail(`${label}: error result: ${text}`);
    return text;
}

try {
    results.tools = (await client.listTools()).tools.map((t) => t.name);
} catch (error) {
    fail(`tools/list threw: ${error.message}`);
}
if (!results.tools.includes('execute')) fail(`tools/list has no execute: ${results.tools}`);

const sum = await execute('add', 'return await tools.math.add({a: 1, b: 2})');
if (sum.trim() !== '3') fail(`add: expected "3", got ${JSON.stringify(sum)}`);

const echoed = await execute('approval', 'return await tools.ops.echo({x: 1})');
if (results.approval.asked < 1) fail('approval: the approval question never reached the elicitation handler');
let echoedValue;
try { echoedValue = JSON.parse(echoed); } catch { /* compared below */ }
if (!isDeepStrictEqual(echoedValue, { x: 1 })) fail(`approval: expected the echo {"x":1}, got ${JSON.stringify(echoed)}`);

if (process.env.TS_PLUGIN === '1') {
    const answer = await execute('ts_plugin', "return await tools.ts2026.ask({question: 'What is the answer?'})");
    if (!results.asked.some((m) => m.includes('What is the answer?'))) fail("ts_plugin: the plugin's question never reached the elicitation handler");
    if (answer.trim() !== 'answered: forty-two') fail(`ts_plugin: expected "answered: forty-two", got ${JSON.stringify(answer)}`);
}

await client.close();
console.log(JSON.stringify({ ...results, ok: true }));
