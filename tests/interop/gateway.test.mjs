// Gateway mode (--upstream NAME=COMMAND) with real stdio MCP servers from npm, pinned in
// package.json: the official servers repository's server-everything on /mcp/everything and
// server-filesystem on /mcp/fs, each run by node as its own stdio process per session, and the
// official TypeScript SDK client (Client + StreamableHTTPClientTransport) talking to them through
// mcpactord. What is checked: the upstream's own initialize answer and tools reach the client;
// progress, sampling, elicitation and roots requests the upstream sends during a call reach the
// client and its answers go back; a session goes on after mcpactord restarts (a new process,
// re-initialized with the stored initialize); DELETE ends the session's process; two sessions
// have two processes; a long call's POST stream cut and resumed with Last-Event-ID (what was
// missed once, nothing twice); mcpactord killed with SIGKILL mid-call and restarted (the stored
// events replay, the call that was in flight gets an error, the session goes on); the upstream
// killed mid-call; a program that is not an MCP server; the MCP Inspector's CLI and mcp-remote
// through the gateway. Run by `meson test --suite interop` (node's built-in test runner); every
// wait is bounded.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { after, before } from './hooks.mjs';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

import { startServer } from './server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = (pkg) => {
  const dir = path.join(here, 'node_modules/@modelcontextprotocol', pkg);
  const json = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  return path.join(dir, typeof json.bin === 'string' ? json.bin : Object.values(json.bin)[0]);
};
const EVERYTHING = bin('server-everything');
const FILESYSTEM = bin('server-filesystem');
const pkgBin = (dir, name) => {
  const json = JSON.parse(fs.readFileSync(path.join(here, 'node_modules', dir, 'package.json'), 'utf8'));
  return path.join(here, 'node_modules', dir, json.bin[name]);
};
const INSPECTOR = pkgBin('@modelcontextprotocol/inspector', 'mcp-inspector');
const MCP_REMOTE = pkgBin('mcp-remote', 'mcp-remote');
const V = '2025-11-25';
const TEST = { timeout: 60000 };

let server;
let shared; // the directory server-filesystem may use

before(async () => {
  shared = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpd-gateway-fs-'));
  server = await startServer([
    '--upstream', `everything=${process.execPath} ${EVERYTHING} stdio`,
    '--upstream', `fs=${process.execPath} ${FILESYSTEM} ${shared}`,
    // not an MCP server: it prints a line and exits
    '--upstream', 'notmcp=/bin/echo this is not an MCP server',
  ]);
});

after(async () => {
  const status = await server?.stop();
  if (shared) fs.rmSync(shared, { recursive: true, force: true });
  assert.deepEqual(status, { code: 0, signal: null }, `the server exits 0 on SIGTERM\n${server?.tail()}`);
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const textOf = (result) => result.content.find((c) => c.type === 'text')?.text;
const base = () => `http://127.0.0.1:${server.port}`;

// A client of /mcp/NAME with capabilities; handlers answer the upstream's requests.
async function connect(name, { capabilities = {}, sessionId, handlers = [] } = {}) {
  const client = new Client({ name: 'mcpactord-gateway-interop', version: '1.0.0' }, { capabilities });
  for (const [schema, fn] of handlers) client.setRequestHandler(schema, fn);
  const transport = new StreamableHTTPClientTransport(new URL(`${base()}/mcp/${name}`), { sessionId });
  await client.connect(transport);
  return { client, transport };
}

// The admin endpoint's counters (/stats).
async function stats() {
  const r = await fetch(`http://127.0.0.1:${server.adminPort}/stats`, { signal: AbortSignal.timeout(10000) });
  assert.equal(r.status, 200);
  return r.json();
}

async function eventually(what, fn, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

// The upstream processes running now (the gauge of /stats; see docs/design/gateway.md).
async function upstreamsRunning() {
  const s = await stats();
  const v = s.upstreams_running ?? s.upstreams?.running;
  assert.equal(typeof v, 'number', `a running-upstreams gauge in /stats: ${JSON.stringify(s).slice(0, 400)}`);
  return v;
}

describe('server-everything behind /mcp/everything', () => {
  test('initialize answers with the upstream\'s own server info; its tools are listed and called', TEST, async () => {
    const { client, transport } = await connect('everything');
    const info = client.getServerVersion();
    assert.match(info.name, /everything/i, `the upstream's serverInfo: ${JSON.stringify(info)}`);
    assert.ok(transport.sessionId, 'an Mcp-Session-Id');
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const want of ['echo', 'get-sum', 'trigger-long-running-operation']) assert.ok(names.includes(want), `${want} in ${names}`);
    const echo = await client.callTool({ name: 'echo', arguments: { message: 'through the gateway' } });
    assert.equal(textOf(echo), 'Echo: through the gateway');
    const sum = await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 40 } });
    assert.match(textOf(sum), /42/);
    const bad = await client.callTool({ name: 'get-sum', arguments: { a: 'two' } });
    assert.equal(bad.isError, true, `a bad argument is the upstream's tool error: ${JSON.stringify(bad)}`);
    await transport.terminateSession();
    await client.close();
  });

  test('progress of a long call reaches the client on the call\'s stream', TEST, async () => {
    const { client, transport } = await connect('everything');
    const seen = [];
    const r = await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 4 } },
      undefined, { onprogress: (p) => seen.push(p) });
    assert.match(textOf(r), /Long running operation completed/);
    assert.deepEqual(seen.map((p) => p.progress), [1, 2, 3, 4], JSON.stringify(seen));
    assert.ok(seen.every((p) => p.total === 4));
    await transport.terminateSession();
    await client.close();
  });

  test('sampling, elicitation and roots requests of the upstream reach the client; its answers go back', TEST, async () => {
    const asked = [];
    const { client, transport } = await connect('everything', {
      capabilities: { sampling: {}, elicitation: {}, roots: {} },
      handlers: [
        [CreateMessageRequestSchema, (req) => {
          asked.push('sampling');
          return { role: 'assistant', model: 'test-model', content: { type: 'text', text: `sampled: ${req.params.messages[0].content.text}` } };
        }],
        [ElicitRequestSchema, () => {
          asked.push('elicitation');
          return { action: 'accept', content: { name: 'Ada', check: true, firstLine: 'x', integer: 7, number: 1.5, email: 'a@example.com', untitledSingleSelectEnum: 'Option 1' } };
        }],
        [ListRootsRequestSchema, () => {
          asked.push('roots');
          return { roots: [{ uri: 'file:///gateway-root', name: 'the test root' }] };
        }],
      ],
    });
    // the tools that need a client capability are registered once the upstream saw initialized
    const names = await eventually('the conditional tools', async () => {
      const n = (await client.listTools()).tools.map((t) => t.name);
      return n.includes('trigger-sampling-request') && n;
    });
    const s = await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hello' } });
    assert.match(textOf(s), /sampled: .*hello/, textOf(s));
    assert.ok(names.includes('get-roots-list'), names.join(','));
    const r = await client.callTool({ name: 'get-roots-list', arguments: {} });
    assert.match(textOf(r), /gateway-root/, textOf(r));
    const e = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
    assert.match(JSON.stringify(e.content), /Ada/, JSON.stringify(e.content));
    assert.deepEqual([...new Set(asked)].sort(), ['elicitation', 'roots', 'sampling'], asked.join(','));
    await transport.terminateSession();
    await client.close();
  });

  test('two sessions run two processes; DELETE ends a session\'s process', TEST, async () => {
    // the sessions of the tests before were deleted: their processes end (and are reaped) soon
    await eventually('no process left from the tests before', async () => (await upstreamsRunning()) === 0);
    const before0 = 0;
    const a = await connect('everything');
    const b = await connect('everything');
    await a.client.callTool({ name: 'echo', arguments: { message: 'a' } });
    await b.client.callTool({ name: 'echo', arguments: { message: 'b' } });
    assert.equal(await upstreamsRunning(), before0 + 2);
    await a.transport.terminateSession();
    await eventually('the first session\'s process to end', async () => (await upstreamsRunning()) === before0 + 1);
    const r = await b.client.callTool({ name: 'echo', arguments: { message: 'still here' } });
    assert.equal(textOf(r), 'Echo: still here');
    await b.transport.terminateSession();
    await eventually('both processes to end', async () => (await upstreamsRunning()) === before0);
    await a.client.close();
    await b.client.close();
  });
});

// A 2026-07-28 (stateless) request on /mcp/NAME: its _meta and mirrored headers; the answer's
// JSON-RPC messages (an SSE body's events in order, or the one JSON answer).
let modernId = 0;
async function modern(name, method, params = {}, { caps = {}, progress } = {}) {
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': caps,
    'io.modelcontextprotocol/clientInfo': { name: 'mcpactord-gateway-interop', version: '1.0.0' },
  };
  if (progress !== undefined) meta.progressToken = progress;
  const headers = {
    'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method,
  };
  if (params.name) headers['Mcp-Name'] = params.name;
  const r = await fetch(`${base()}/mcp/${name}`, {
    method: 'POST', headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: ++modernId, method, params: { ...params, _meta: meta } }),
  });
  const text = await r.text();
  const msgs = (r.headers.get('content-type') || '').startsWith('text/event-stream')
    ? text.split('\n').filter((l) => l.startsWith('data:') && l.length > 5).map((l) => JSON.parse(l.slice(5)))
    : [JSON.parse(text)];
  return { status: r.status, msgs, last: msgs[msgs.length - 1] };
}

describe('server-everything behind /mcp/everything, 2026-07-28 (--upstream-pool)', () => {
  test('discover, list and call through the pool; progress goes on the call\'s stream', TEST, async () => {
    const d = await modern('everything', 'server/discover');
    assert.equal(d.status, 200, JSON.stringify(d.msgs));
    assert.ok(d.last.result.supportedVersions.includes('2026-07-28'));
    assert.match(d.last.result._meta['io.modelcontextprotocol/serverInfo'].name, /everything/i);
    // the tools that need elicitation and sampling: the pool's processes declare both
    await eventually('the conditional tools', async () => {
      const n = (await modern('everything', 'tools/list')).last.result.tools.map((t) => t.name);
      return n.includes('trigger-elicitation-request') && n.includes('trigger-sampling-request');
    });
    const echo = await modern('everything', 'tools/call', { name: 'echo', arguments: { message: 'stateless' } });
    assert.equal(textOf(echo.last.result), 'Echo: stateless');
    assert.equal(echo.last.result.resultType, 'complete');
    const long = await modern('everything', 'tools/call',
      { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 4 } }, { progress: 'p1' });
    const progress = long.msgs.filter((m) => m.method === 'notifications/progress');
    assert.deepEqual(progress.map((m) => [m.params.progressToken, m.params.progress]),
      [['p1', 1], ['p1', 2], ['p1', 3], ['p1', 4]], JSON.stringify(long.msgs));
    assert.match(textOf(long.last.result), /Long running operation completed/);
  });

  test('elicitation and sampling become input_required; the retry\'s answers reach the waiting upstream', TEST, async () => {
    const caps = { elicitation: {}, sampling: {} };
    const first = await modern('everything', 'tools/call', { name: 'trigger-elicitation-request', arguments: {} }, { caps });
    const ir = first.last.result;
    assert.equal(ir.resultType, 'input_required', JSON.stringify(first.msgs));
    const [[key, ask]] = Object.entries(ir.inputRequests);
    assert.equal(ask.method, 'elicitation/create');
    const content = { name: 'Ada', check: true, firstLine: 'x', integer: 7, number: 1.5, email: 'a@example.com', untitledSingleSelectEnum: 'Option 1' };
    const done = await modern('everything', 'tools/call', {
      name: 'trigger-elicitation-request', arguments: {}, requestState: ir.requestState,
      inputResponses: { [key]: { action: 'accept', content } },
    }, { caps });
    assert.match(JSON.stringify(done.last.result.content), /Ada/, JSON.stringify(done.msgs));
    const s1 = await modern('everything', 'tools/call', { name: 'trigger-sampling-request', arguments: { prompt: 'hello' } }, { caps });
    const [[skey, sask]] = Object.entries(s1.last.result.inputRequests);
    assert.equal(sask.method, 'sampling/createMessage');
    const s2 = await modern('everything', 'tools/call', {
      name: 'trigger-sampling-request', arguments: { prompt: 'hello' }, requestState: s1.last.result.requestState,
      inputResponses: { [skey]: { role: 'assistant', model: 'test-model', content: { type: 'text', text: 'sampled: hello' } } },
    }, { caps });
    assert.match(textOf(s2.last.result), /sampled: hello/, JSON.stringify(s2.msgs));
  });
});

describe('server-filesystem behind /mcp/fs', () => {
  test('a file written through one call is read back through another', TEST, async () => {
    const { client, transport } = await connect('fs');
    const allowed = await client.callTool({ name: 'list_allowed_directories', arguments: {} });
    assert.match(textOf(allowed), new RegExp(path.basename(shared)), textOf(allowed));
    const file = path.join(fs.realpathSync(shared), 'note.txt');
    const w = await client.callTool({ name: 'write_file', arguments: { path: file, content: 'kept by the gateway\n' } });
    assert.notEqual(w.isError, true, JSON.stringify(w));
    assert.equal(fs.readFileSync(file, 'utf8'), 'kept by the gateway\n');
    const r = await client.callTool({ name: 'read_text_file', arguments: { path: file } });
    assert.match(textOf(r), /kept by the gateway/);
    const outside = await client.callTool({ name: 'read_text_file', arguments: { path: '/etc/hostname' } });
    assert.equal(outside.isError, true, `a path outside the allowed directory: ${JSON.stringify(outside)}`);
    await transport.terminateSession();
    await client.close();
  });
});

describe('a restart of mcpactord', () => {
  test('a session goes on: its next call starts a new process, re-initialized', TEST, async () => {
    const { client, transport } = await connect('everything');
    const sessionId = transport.sessionId;
    assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { message: 'before' } })), 'Echo: before');
    await client.close();
    server = await server.restart();
    const again = await connect('everything', { sessionId });
    const r = await again.client.callTool({ name: 'echo', arguments: { message: 'after the restart' } });
    assert.equal(textOf(r), 'Echo: after the restart');
    assert.equal(await upstreamsRunning(), 1, 'one process: the session\'s new one');
    await again.transport.terminateSession();
    await again.client.close();
  });
});

// ---- raw HTTP: a POST stream read event by event, cut, and resumed ----

const rawHeaders = (sessionId, extra = {}) => ({
  'content-type': 'application/json', accept: 'application/json, text/event-stream',
  'mcp-session-id': sessionId, 'mcp-protocol-version': V, ...extra,
});

// An SSE response read one event at a time: next() resolves to {id, data (parsed), raw} or
// null at the end of the stream; close() cuts the connection.
function sseReader(response, ac) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  return {
    async next(timeoutMs = 15000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const cut = buf.indexOf('\n\n');
        if (cut >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const ev = { id: undefined, raw: block };
          const data = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('id:')) ev.id = line.slice(3).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
          }
          if (!data.length || !data.join('')) continue; // a priming event, a comment
          ev.data = JSON.parse(data.join('\n'));
          return ev;
        }
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no SSE event within ${timeoutMs} ms`);
        let timer;
        const chunk = await Promise.race([
          reader.read(),
          new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`no SSE event within ${timeoutMs} ms`)), left); }),
        ]).finally(() => clearTimeout(timer));
        if (chunk.done) return null;
        buf += decoder.decode(chunk.value, { stream: true }).replace(/\r\n/g, '\n');
      }
    },
    close() {
      ac.abort();
      reader.cancel().catch(() => {});
    },
  };
}

async function postStream(sessionId, id, method, params) {
  const ac = new AbortController();
  const r = await fetch(`${base()}/mcp/everything`, {
    method: 'POST', headers: rawHeaders(sessionId), signal: ac.signal,
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
  });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /text\/event-stream/, 'a long call answers as an SSE stream');
  return sseReader(r, ac);
}

async function resume(sessionId, lastEventId) {
  const ac = new AbortController();
  const r = await fetch(`${base()}/mcp/everything`, {
    method: 'GET', headers: rawHeaders(sessionId, { accept: 'text/event-stream', 'last-event-id': lastEventId }),
    signal: ac.signal,
  });
  assert.equal(r.status, 200, `the resume: ${r.status} ${await r.clone().text().catch(() => '')}`);
  return sseReader(r, ac);
}

// Reads st until the answer to id (or the end); returns {progress: [values], answers: [msgs]}.
async function readUntilAnswer(st, id) {
  const progress = [];
  const answers = [];
  for (;;) {
    const ev = await st.next();
    if (!ev) break;
    const m = ev.data;
    if (m.method === 'notifications/progress') progress.push(m.params.progress);
    if (m.id === id && !m.method) {
      answers.push(m);
      break;
    }
  }
  return { progress, answers };
}

// The processes mcpactord runs now (its children), by pid.
function childrenOf(pid) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(d));
    } catch { /* gone */ }
  }
  return out;
}

const LONG = (id, steps, duration) => ({
  name: 'trigger-long-running-operation', arguments: { duration, steps }, _meta: { progressToken: `p${id}` },
});

describe('streams through the gateway', () => {
  test('a long call\'s POST stream cut after its first progress and resumed with Last-Event-ID: the rest once, nothing twice', TEST, async () => {
    const { client, transport } = await connect('everything');
    const st = await postStream(transport.sessionId, 71, 'tools/call', LONG(71, 4, 2));
    let first;
    do first = await st.next(); while (first && first.data.method !== 'notifications/progress');
    assert.ok(first, 'a first progress event');
    assert.equal(first.data.params.progress, 1);
    assert.ok(first.id, 'the event has an id to resume from');
    st.close();
    await sleep(2500); // the rest of the call happens meanwhile, stored
    const again = await resume(transport.sessionId, first.id);
    const { progress, answers } = await readUntilAnswer(again, 71);
    again.close();
    assert.deepEqual(progress, [2, 3, 4], 'the progress missed, each once, none seen before');
    assert.equal(answers.length, 1);
    assert.match(textOf(answers[0].result), /Long running operation completed/);
    await transport.terminateSession();
    await client.close();
  });

  test('the upstream killed mid-call: the call gets an error at once; the next call starts a new process', TEST, async () => {
    const { client, transport } = await connect('everything');
    await client.callTool({ name: 'echo', arguments: { message: 'up' } });
    const st = await postStream(transport.sessionId, 72, 'tools/call', LONG(72, 10, 20));
    let ev;
    do ev = await st.next(); while (ev && ev.data.method !== 'notifications/progress');
    // the session's process: the only child of mcpactord that runs the everything server
    const mine = childrenOf(server.pid).filter((p) => fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('server-everything'));
    assert.equal(mine.length, 1, `one everything process: ${mine}`);
    const t0 = Date.now();
    process.kill(mine[0], 'SIGKILL');
    const { answers } = await readUntilAnswer(st, 72);
    st.close();
    assert.equal(answers.length, 1, 'the open call is answered');
    assert.ok(answers[0].error, `an error: ${JSON.stringify(answers[0])}`);
    assert.ok(Date.now() - t0 < 5000, `at once, not after the call's 20 s: ${Date.now() - t0} ms`);
    const r = await client.callTool({ name: 'echo', arguments: { message: 'a new process' } });
    assert.equal(textOf(r), 'Echo: a new process');
    const now = childrenOf(server.pid).filter((p) => fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('server-everything'));
    assert.ok(now.length === 1 && now[0] !== mine[0], `a new process: ${now}, the killed one ${mine[0]}`);
    await transport.terminateSession();
    await client.close();
  });

  test('mcpactord killed (SIGKILL) mid-call and restarted: stored events replay, the call in flight gets an error, the session goes on', TEST, async () => {
    const { client, transport } = await connect('everything');
    const sid = transport.sessionId;
    const st = await postStream(sid, 73, 'tools/call', LONG(73, 10, 10));
    const seen = [];
    let ev;
    do {
      ev = await st.next();
      if (ev?.data.method === 'notifications/progress') seen.push(ev);
    } while (ev && seen.length < 2);
    assert.equal(seen.length, 2, 'two progress events before the kill');
    await client.close();
    const old = childrenOf(server.pid);
    server = await server.crashRestart();
    for (const p of old) await eventually(`the old upstream ${p} to be gone`, () => !fs.existsSync(`/proc/${p}`) || fs.readFileSync(`/proc/${p}/stat`, 'utf8').includes(') Z'), 10000);
    // resume from the first progress: the second replays (it was stored before it was sent),
    // then the call's error (its process died with mcpactord)
    const again = await resume(sid, seen[0].id);
    const { progress, answers } = await readUntilAnswer(again, 73);
    again.close();
    assert.equal(progress[0], 2, `the stored second progress replays first: ${progress}`);
    assert.equal(answers.length, 1, 'the call in flight is answered');
    assert.ok(answers[0].error, `with an error: ${JSON.stringify(answers[0])}`);
    const c2 = await connect('everything', { sessionId: sid });
    const r = await c2.client.callTool({ name: 'echo', arguments: { message: 'after the crash' } });
    assert.equal(textOf(r), 'Echo: after the crash');
    await c2.transport.terminateSession();
    await c2.client.close();
  });
});

describe('a program that is not an MCP server', () => {
  test('initialize gets an error and no session; the server goes on', TEST, async () => {
    const r = await fetch(`${base()}/mcp/notmcp`, {
      method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: V, capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
      signal: AbortSignal.timeout(40000),
    });
    const text = await r.text();
    assert.ok(r.status >= 400 || /"error"/.test(text), `an error: ${r.status} ${text}`);
    assert.equal(r.headers.get('mcp-session-id'), null, `no session: ${r.status} ${text}`);
    const { client, transport } = await connect('everything');
    assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { message: 'fine' } })), 'Echo: fine');
    await transport.terminateSession();
    await client.close();
  });
});

// Runs a node program; resolves to {code, stdout, stderr}; killed after timeoutMs.
function runNode(args, { input, env = {}, timeoutMs = 60000 } = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'], timeout: timeoutMs, killSignal: 'SIGKILL' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, child }));
    if (input) input(child);
  });
}

describe('other clients through the gateway', () => {
  let home;
  before(() => { home = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpd-gateway-home-')); });
  after(() => { if (home) fs.rmSync(home, { recursive: true, force: true }); });

  test('the MCP Inspector CLI lists server-everything\'s tools and calls echo', TEST, async () => {
    const common = ['--cli', `${base()}/mcp/everything`, '--transport', 'http', '--protocol-era', 'legacy', '--format', 'json'];
    const env = { HOME: home, NO_COLOR: '1' };
    const list = await runNode([INSPECTOR, ...common, '--method', 'tools/list'], { env });
    assert.equal(list.code, 0, `${list.stdout}\n${list.stderr}`);
    assert.match(list.stdout, /"get-sum"/);
    const call = await runNode([INSPECTOR, ...common, '--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'message=from the inspector'], { env });
    assert.equal(call.code, 0, `${call.stdout}\n${call.stderr}`);
    assert.match(call.stdout, /Echo: from the inspector/);
  });

  test('mcp-remote (a stdio client of a remote server) initializes, lists and calls through it', TEST, async () => {
    const lines = [];
    const run = await runNode([MCP_REMOTE, `${base()}/mcp/everything`, '--transport', 'http-only', '--silent'], {
      env: { HOME: home, MCP_REMOTE_CONFIG_DIR: path.join(home, '.mcp-auth') },
      timeoutMs: 45000,
      input: (child) => {
        let buf = '';
        const send = (m) => child.stdin.write(`${JSON.stringify(m)}\n`);
        child.stdout.on('data', (d) => {
          buf += d;
          let nl;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (!line.startsWith('{')) continue;
            const m = JSON.parse(line);
            lines.push(m);
            if (m.id === 1) {
              send({ jsonrpc: '2.0', method: 'notifications/initialized' });
              send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
            } else if (m.id === 2) {
              send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { message: 'via mcp-remote' } } });
            } else if (m.id === 3) {
              child.stdin.end();
              setTimeout(() => child.kill('SIGTERM'), 500);
            }
          }
        });
        send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: V, capabilities: {}, clientInfo: { name: 'mcp-remote-test', version: '1' } } });
      },
    });
    const byId = Object.fromEntries(lines.filter((m) => m.id !== undefined).map((m) => [m.id, m]));
    assert.ok(byId[1]?.result, `initialize answered: ${JSON.stringify(lines).slice(0, 800)}\n${run.stderr.slice(-2000)}`);
    assert.match(byId[1].result.serverInfo.name, /everything/i);
    assert.ok(byId[2]?.result.tools.some((t) => t.name === 'get-sum'), JSON.stringify(byId[2]).slice(0, 500));
    assert.equal(textOf(byId[3]?.result ?? { content: [] }), 'Echo: via mcp-remote', JSON.stringify(byId[3]));
  });
});
