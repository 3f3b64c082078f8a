// Gateway mode (--upstream NAME=COMMAND) with real stdio MCP servers from npm, pinned in
// package.json: the official servers repository's server-everything on /mcp/everything and
// server-filesystem on /mcp/fs, each run by node as its own stdio process per session, and the
// official TypeScript SDK client (Client + StreamableHTTPClientTransport) talking to them through
// mcpactord. What is checked: the upstream's own initialize answer and tools reach the client;
// progress, sampling, elicitation and roots requests the upstream sends during a call reach the
// client and its answers go back; a session goes on after mcpactord restarts (a new process,
// re-initialized with the stored initialize); DELETE ends the session's process; two sessions
// have two processes. Run by `meson test --suite interop` (node's built-in test runner); every
// wait is bounded.
import assert from 'node:assert/strict';
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
const TEST = { timeout: 60000 };

let server;
let shared; // the directory server-filesystem may use

before(async () => {
  shared = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpd-gateway-fs-'));
  server = await startServer([
    '--upstream', `everything=${process.execPath} ${EVERYTHING} stdio`,
    '--upstream', `fs=${process.execPath} ${FILESYSTEM} ${shared}`,
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
