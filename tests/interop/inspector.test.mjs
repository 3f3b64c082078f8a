// The MCP Inspector's CLI (@modelcontextprotocol/inspector, pinned in package.json) against the real
// mcpactord started with --modern, pinned to the 2026-07-28 era (`--protocol-era modern`: no
// fallback to initialize): tools/list and tools/call echo. The Inspector talks to the server
// through a recording loopback proxy, so the test also checks what went over the wire: 2026-07-28
// requests (MCP-Protocol-Version, _meta), no initialize, no session. Run by
// `meson test --suite interop` (node's built-in test runner); every wait is bounded.
//
// The Inspector 2.x declares Node >= 22.19; its CLI path runs on the Node 20 of this machine.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { after, before } from './hooks.mjs';
import { fileURLToPath } from 'node:url';

import { startServer } from './server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.join(here, 'node_modules/@modelcontextprotocol/inspector');
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
const INSPECTOR = path.join(pkgDir, pkg.bin['mcp-inspector']);
const RUN_TIMEOUT_MS = 60000;

let server;
let proxy;
let home; // the Inspector keeps ~/.mcp-inspector: a scratch HOME, removed at the end

before(async () => {
  server = await startServer(['--modern']);
  proxy = await recordingProxy(server.port);
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpd-inspector-home-'));
});

after(async () => {
  await proxy?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
  const status = await server.stop();
  assert.deepEqual(status, { code: 0, signal: null }, `the server exits 0 on SIGTERM\n${server.tail()}`);
});

// An HTTP proxy on 127.0.0.1 that forwards everything to the server's port (Host rewritten) and
// records each request: method, headers, body, and the response status.
function recordingProxy(targetPort) {
  const seen = [];
  const srv = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const entry = { method: req.method, headers: req.headers, body: body.toString('utf8') };
      seen.push(entry);
      const upstream = http.request({
        host: '127.0.0.1', port: targetPort, path: req.url, method: req.method,
        headers: { ...req.headers, host: `127.0.0.1:${targetPort}` },
      }, (ur) => {
        entry.status = ur.statusCode;
        res.writeHead(ur.statusCode, ur.headers);
        ur.pipe(res);
      });
      upstream.setTimeout(RUN_TIMEOUT_MS, () => upstream.destroy(new Error('upstream timeout')));
      upstream.on('error', () => res.destroy());
      upstream.end(body);
    });
  });
  return new Promise((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => resolve({
      url: `http://127.0.0.1:${srv.address().port}/mcp`,
      seen,
      close: () => new Promise((r) => { srv.closeAllConnections?.(); srv.close(() => r()); }),
    }));
  });
}

// Runs the Inspector CLI with args; resolves to {code, signal, stdout, stderr}; killed after the
// timeout.
function inspector(args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [INSPECTOR, ...args], {
      cwd: home,
      env: { ...process.env, HOME: home, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: RUN_TIMEOUT_MS,
      killSignal: 'SIGKILL',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

const base = () => ['--cli', proxy.url, '--transport', 'http', '--protocol-era', 'modern', '--format', 'json',
  '--stored-auth-only', '--connect-timeout', '10000'];

function parseOut(run) {
  try {
    return JSON.parse(run.stdout);
  } catch {
    assert.fail(`the Inspector printed no JSON (exit ${run.code} ${run.signal ?? ''}):\n${run.stdout}\n${run.stderr}`);
  }
}

// What the proxy saw since `from`, as text for assertion messages.
const dump = (from) => proxy.seen.slice(from).map((e) => `> ${e.method} ${JSON.stringify(
  Object.fromEntries(Object.entries(e.headers).filter(([k]) => k.startsWith('mcp-'))))}\n> ${e.body}\n< ${e.status}`)
  .join('\n');

// Every request of a run: 2026-07-28, no initialize, no session, no GET stream.
function assertModernWire(from) {
  const runs = proxy.seen.slice(from);
  assert.ok(runs.length > 0, 'the Inspector went through the proxy');
  for (const e of runs) {
    assert.equal(e.method, 'POST', dump(from));
    assert.equal(e.headers['mcp-protocol-version'], '2026-07-28', dump(from));
    assert.ok(!('mcp-session-id' in e.headers), dump(from));
    const json = JSON.parse(e.body);
    assert.notEqual(json.method, 'initialize', dump(from));
    if ('id' in json) assert.equal(json.params?._meta?.['io.modelcontextprotocol/protocolVersion'], '2026-07-28', dump(from));
  }
}

describe(`Inspector ${pkg.version} CLI, --protocol-era modern`, () => {
  test('tools/list', { timeout: RUN_TIMEOUT_MS + 10000 }, async () => {
    const from = proxy.seen.length;
    const run = await inspector([...base(), '--method', 'tools/list']);
    assert.equal(run.code, 0, `exit status\n${run.stdout}\n${run.stderr}\n${dump(from)}`);
    const out = parseOut(run);
    const names = (out.result?.tools ?? out.tools ?? []).map((t) => t.name);
    for (const name of ['echo', 'add', 'slow', 'counter', 'new_counter', 'elicit_name', 'notify']) {
      assert.ok(names.includes(name), `${name} is listed: ${run.stdout}`);
    }
    assertModernWire(from);
    assert.ok(proxy.seen.slice(from).some((e) => JSON.parse(e.body).method === 'tools/list'), dump(from));
  });

  test('tools/call echo text=hi', { timeout: RUN_TIMEOUT_MS + 10000 }, async () => {
    const from = proxy.seen.length;
    const run = await inspector([...base(), '--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'text=hi']);
    assert.equal(run.code, 0, `exit status\n${run.stdout}\n${run.stderr}\n${dump(from)}`);
    const result = parseOut(run).result;
    assert.deepEqual(result?.content, [{ type: 'text', text: 'hi' }], run.stdout);
    assert.equal(result?.isError ?? false, false);
    assertModernWire(from);
    const call = proxy.seen.slice(from).find((e) => JSON.parse(e.body).method === 'tools/call');
    assert.ok(call, dump(from));
    assert.equal(call.headers['mcp-name'], 'echo', dump(from));
    assert.equal(call.status, 200, dump(from));
  });
});
