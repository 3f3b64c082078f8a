// mcpbench reference peer: an MCP server on the TypeScript SDK v2 (@modelcontextprotocol/server),
// serving the stateless revision 2026-07-28.
//
// What `mcpbench call-modern` compares mcpactord --modern against: the SDK's own serving entry,
// used the way its docs show for plain node:http: createMcpHandler(factory) wrapped once with
// toNodeHandler() from @modelcontextprotocol/node, the Host/Origin guards in front. The factory
// builds a fresh McpServer per request (the entry calls it once per HTTP request, for both eras).
// 2025-era traffic (initialize, ...) gets the entry's default, its stateless legacy fallback: no
// Mcp-Session-Id, GET/DELETE 405. Nothing here is tuned beyond not logging per request.
//
// Tools:
//   echo {text}  -> one text item equal to text
// Routes: POST /mcp (GET/DELETE /mcp as the entry answers them); GET /debug/mem ->
// process.memoryUsage() (with ?gc=1 and node --expose-gc it collects garbage first).
// Env: PORT (3000; 0 picks a free one), RESPONSE_MODE (auto|json|sse, the entry's responseMode for
//      2026-07-28 exchanges; default auto: JSON unless the handler streams), LEGACY
//      (stateless|reject: the entry's posture for 2025-era traffic; default stateless).
// Binds 127.0.0.1 only; exits 0 on SIGTERM/SIGINT.
import { createServer } from 'node:http';
import { z } from 'zod';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { localhostHostValidation, localhostOriginValidation, toNodeHandler } from '@modelcontextprotocol/node';

const HOST = '127.0.0.1';
const PORT = Number(process.env.PORT ?? 3000);
const RESPONSE_MODE = process.env.RESPONSE_MODE ?? 'auto';
const LEGACY = process.env.LEGACY ?? 'stateless';
if (!['auto', 'json', 'sse'].includes(RESPONSE_MODE)) throw new Error(`RESPONSE_MODE must be auto, json or sse: ${RESPONSE_MODE}`);
if (!['stateless', 'reject'].includes(LEGACY)) throw new Error(`LEGACY must be stateless or reject: ${LEGACY}`);

const echoInput = z.object({ text: z.string() });

function buildServer() {
    const server = new McpServer({ name: 'mcpbench-peer-node-sdk2', version: '0.1.0' });
    server.registerTool(
        'echo',
        { description: 'Returns its text argument', inputSchema: echoInput },
        async ({ text }) => ({ content: [{ type: 'text', text }] })
    );
    return server;
}

const handler = createMcpHandler(() => buildServer(), {
    legacy: LEGACY,
    responseMode: RESPONSE_MODE,
    onerror: err => console.error('mcp:', err.message)
});
const mcp = toNodeHandler(handler, { onerror: err => console.error('adapter:', err) });
const validateHost = localhostHostValidation();
const validateOrigin = localhostOriginValidation();

const httpServer = createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/debug/mem' && req.method === 'GET') {
        if (req.url.includes('gc=1') && typeof globalThis.gc === 'function') globalThis.gc();
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(process.memoryUsage()));
        return;
    }
    if (path !== '/mcp') {
        res.writeHead(404).end();
        return;
    }
    if (!validateHost(req, res) || !validateOrigin(req, res)) return;
    try {
        await mcp(req, res);
    } catch (err) {
        console.error(`${req.method} /mcp:`, err);
        if (!res.headersSent) res.writeHead(500).end();
    }
});

httpServer.on('error', err => {
    console.error(`cannot listen on ${HOST}:${PORT}:`, err.message);
    process.exit(1);
});
httpServer.listen(PORT, HOST, () => {
    console.log(
        `mcpbench-peer-node-sdk2 listening on http://${HOST}:${httpServer.address().port}/mcp pid=${process.pid} ` +
            `responseMode=${RESPONSE_MODE} legacy=${LEGACY}`
    );
});

for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
