// mcpbench reference peer: an MCP Streamable HTTP server on the official TypeScript SDK.
//
// What mcpbench compares mcpactord against: the SDK's own transport, used the way its docs show
// for a stateful server (one transport + one McpServer per session, routed by Mcp-Session-Id),
// with resumability through an event store. Nothing here is tuned beyond not logging per request.
//
// Tools:
//   echo   {text}                          -> one text item equal to text
//   emit   {count, standalone?, delayMs?}  -> count notifications/message; standalone=true sends them
//                                             as session-level notifications (the GET stream),
//                                             otherwise on the call's own stream
//   notify {count, target: "session"|"request"}  the same, spelled like mcpactord's demo tool, so one
//                                             mcpbench command line fits both servers
// Routes: POST/GET/DELETE /mcp; GET /debug/mem -> {sessions, ...process.memoryUsage()} (with
// ?gc=1 and node --expose-gc it collects garbage first).
// Env: PORT (3000), JSON_RESPONSE=1 (answer POSTs with application/json instead of SSE),
//      EVENT_CAP (events kept per stream, 1024), STREAM_CAP (streams kept per session, 1024),
//      MAX_SESSIONS (100000).
// Binds 127.0.0.1 only; exits 0 on SIGTERM/SIGINT.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

const HOST = '127.0.0.1';
const PORT = Number(process.env.PORT ?? 3000);
const JSON_RESPONSE = process.env.JSON_RESPONSE === '1';
const EVENT_CAP = Number(process.env.EVENT_CAP ?? 1024);
const STREAM_CAP = Number(process.env.STREAM_CAP ?? 1024);
const MAX_SESSIONS = Number(process.env.MAX_SESSIONS ?? 100000);

// One per session. Event ids are "<streamId>#<seq>": the SDK's stream ids are UUIDs and
// "_GET_stream", neither contains '#', so the stream is the part before the last '#'. Seqs count
// per stream from 1, so replay order is numeric, never string order. Each stream keeps its newest
// EVENT_CAP events; the store keeps its newest STREAM_CAP streams (a Map iterates in insertion
// order, so the first key is the oldest stream). Priming events (an empty message) are stored so
// their ids resolve, and skipped on replay.
class SessionEventStore {
    constructor() {
        this.streams = new Map(); // streamId -> { seq, events: [{ seq, message }] }
    }

    async storeEvent(streamId, message) {
        let s = this.streams.get(streamId);
        if (!s) {
            s = { seq: 0, events: [] };
            this.streams.set(streamId, s);
            if (this.streams.size > STREAM_CAP) this.streams.delete(this.streams.keys().next().value);
        }
        s.seq += 1;
        s.events.push({ seq: s.seq, message });
        if (s.events.length > EVENT_CAP) s.events.shift();
        return `${streamId}#${s.seq}`;
    }

    static split(eventId) {
        const i = eventId.lastIndexOf('#');
        if (i <= 0) return null;
        const seq = Number(eventId.slice(i + 1));
        return Number.isInteger(seq) ? { streamId: eventId.slice(0, i), seq } : null;
    }

    async getStreamIdForEventId(eventId) {
        const p = SessionEventStore.split(eventId);
        return p && this.streams.has(p.streamId) ? p.streamId : undefined;
    }

    async replayEventsAfter(lastEventId, { send }) {
        const p = SessionEventStore.split(lastEventId);
        const s = p && this.streams.get(p.streamId);
        if (!s) throw new Error(`unknown event id ${lastEventId}`);
        for (const e of s.events) {
            if (e.seq <= p.seq || !('jsonrpc' in e.message)) continue;
            await send(`${p.streamId}#${e.seq}`, e.message);
        }
        return p.streamId;
    }
}

function buildServer() {
    const server = new McpServer({ name: 'mcpbench-peer-node-sdk', version: '0.1.0' }, { capabilities: { logging: {} } });
    server.registerTool(
        'echo',
        { description: 'Returns its text argument', inputSchema: { text: z.string() } },
        async ({ text }) => ({ content: [{ type: 'text', text }] })
    );
    const send = async (count, sessionLevel, extra) => {
        for (let n = 1; n <= count; n++) {
            const note = { method: 'notifications/message', params: { level: 'info', logger: 'emit', data: { n, of: count } } };
            if (sessionLevel) await server.server.notification(note);
            else await extra.sendNotification(note);
        }
        return { content: [{ type: 'text', text: `sent ${count}` }] };
    };
    server.registerTool(
        'emit',
        {
            description: 'Sends count log notifications (standalone: on the session GET stream)',
            inputSchema: { count: z.number().int().min(0), standalone: z.boolean().optional(), delayMs: z.number().int().min(0).optional() }
        },
        async ({ count, standalone, delayMs }, extra) => {
            if (delayMs) await new Promise(r => setTimeout(r, delayMs));
            return send(count, standalone === true, extra);
        }
    );
    server.registerTool(
        'notify',
        {
            description: 'Sends count log notifications on the call stream (request) or the session GET stream (session)',
            inputSchema: { count: z.number().int().min(0), target: z.enum(['request', 'session']).optional() }
        },
        async ({ count, target }, extra) => send(count, target === 'session', extra)
    );
    return server;
}

const sessions = new Map(); // sessionId -> transport
const app = createMcpExpressApp({ host: HOST });

const rpcError = (res, status, code, message) => res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });

app.post('/mcp', async (req, res) => {
    try {
        const sid = req.headers['mcp-session-id'];
        if (sid) {
            const transport = sessions.get(sid);
            if (!transport) return rpcError(res, 404, -32001, 'Session not found');
            return await transport.handleRequest(req, res, req.body);
        }
        if (!isInitializeRequest(req.body)) return rpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id required');
        if (sessions.size >= MAX_SESSIONS) return rpcError(res, 503, -32000, 'Too many sessions');
        const transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            eventStore: new SessionEventStore(),
            enableJsonResponse: JSON_RESPONSE,
            onsessioninitialized: id => sessions.set(id, transport)
        });
        transport.onclose = () => {
            if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await buildServer().connect(transport);
        await transport.handleRequest(req, res, req.body);
    } catch (err) {
        console.error('POST /mcp:', err);
        if (!res.headersSent) rpcError(res, 500, -32603, 'Internal error');
    }
});

const bySession = async (req, res) => {
    const transport = sessions.get(req.headers['mcp-session-id']);
    if (!transport) return rpcError(res, 404, -32001, 'Session not found');
    try {
        await transport.handleRequest(req, res);
    } catch (err) {
        console.error(`${req.method} /mcp:`, err);
        if (!res.headersSent) rpcError(res, 500, -32603, 'Internal error');
    }
};
app.get('/mcp', bySession);
app.delete('/mcp', bySession);

app.get('/debug/mem', (req, res) => {
    if (req.query.gc === '1' && typeof globalThis.gc === 'function') globalThis.gc();
    res.json({ sessions: sessions.size, ...process.memoryUsage() });
});

const httpServer = app.listen(PORT, HOST, err => {
    if (err) {
        console.error(`cannot listen on ${HOST}:${PORT}:`, err.message);
        process.exit(1);
    }
    console.log(`mcpbench-peer-node-sdk listening on http://${HOST}:${httpServer.address().port}/mcp pid=${process.pid}`);
});

for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
