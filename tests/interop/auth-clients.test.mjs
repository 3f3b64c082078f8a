// Real MCP clients against mcpactord behind a real authorization server (issue 22): the SDK v1
// client (@modelcontextprotocol/sdk) and the SDK v2 client (@modelcontextprotocol/client), each
// with its ClientCredentialsProvider, discover everything from the server's 401 (Protected
// Resource Metadata, the issuer's metadata), get a token for the server's resource from
// issuer.mjs (oidc-provider) and call a tool; and the MCP Inspector's CLI with a bearer header.
// The same discovery works for a gateway path (/mcp/everything: server-everything behind
// --upstream): its 401 names the same Protected Resource Metadata, whose resource (/mcp) is a
// parent of the URL, so the client's token for /mcp is the one the gateway path accepts.
// Run by `meson test --suite interop` (node's built-in test runner); every wait is bounded.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { after, before } from './hooks.mjs';
import { fileURLToPath } from 'node:url';

import { ClientCredentialsProvider as ClientCredentialsV1 } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  Client as ClientV2,
  ClientCredentialsProvider as ClientCredentialsV2,
  StreamableHTTPClientTransport as TransportV2,
} from '@modelcontextprotocol/client';

import { MODERN, assertNoTokenIn, decodeJwt, deploy, textOf, use } from './oauth.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const REQUEST = { timeout: 20000 };
const TEST = { timeout: 60000 };

const EVERYTHING = path.join(here, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

let d;
before(async () => {
  d = await deploy({ serverFlags: ['--auth-scopes', 'mcp:tools', '--auth-tool-scope', 'add=mcp:admin',
    '--upstream', `everything=${process.execPath} ${EVERYTHING} stdio`] });
});
after(async () => {
  if (!d) return;
  const { status, log } = await d.stop();
  assertNoTokenIn(log, 'auth clients');
  assert.deepEqual(status, { code: 0, signal: null }, 'the server exits 0 on SIGTERM');
});

// A fetch that records every exchange (method, URL, status) for assertion messages.
function recorder() {
  const seen = [];
  const f = async (url, init = {}) => {
    const entry = { method: init.method ?? 'GET', url: String(url) };
    seen.push(entry);
    const response = await fetch(url, init);
    entry.status = response.status;
    return response;
  };
  return { fetch: f, seen, dump: () => seen.map((e) => `${e.method} ${e.url} -> ${e.status}`).join('\n') };
}

// What every discovery must have done: a 401 from /mcp, the PRM, the issuer's metadata, a token.
function assertDiscovered(rec) {
  const dump = rec.dump();
  assert.ok(rec.seen.some((e) => e.url.startsWith(d.url) && e.status === 401), `a 401 first:\n${dump}`);
  assert.ok(rec.seen.some((e) => e.url.includes('/.well-known/oauth-protected-resource') && e.status === 200), `the PRM:\n${dump}`);
  assert.ok(rec.seen.some((e) => e.url.startsWith(d.iss.issuer) && e.url.includes('/.well-known/') && e.status === 200),
    `the issuer's metadata:\n${dump}`);
  assert.ok(rec.seen.some((e) => e.url === d.iss.token_endpoint && e.status === 200), `a token:\n${dump}`);
}

function assertAudienceBound(provider) {
  const token = provider.tokens()?.access_token;
  assert.ok(token, 'the provider holds a token');
  use(token);
  const { payload } = decodeJwt(token);
  assert.equal(payload.aud, d.resource, 'the client asked for the server\'s resource (RFC 8707)');
  assert.equal(payload.iss, d.iss.issuer);
  return payload;
}

describe('SDK v1 (@modelcontextprotocol/sdk) with ClientCredentialsProvider', () => {
  test('discovers from the 401, gets an audience-bound token, lists tools and calls echo', TEST, async () => {
    const rec = recorder();
    const provider = new ClientCredentialsV1({ clientId: 'mcp-client', clientSecret: d.iss.secret('mcp-client'), expectedIssuer: d.iss.issuer });
    const client = new ClientV1({ name: 'mcpactord-auth-v1', version: '1.0.0' }, { capabilities: {} });
    const transport = new TransportV1(new URL(d.url), { authProvider: provider, fetch: rec.fetch });
    try {
      await client.connect(transport, REQUEST);
      const { tools } = await client.listTools(undefined, REQUEST);
      assert.ok(tools.some((t) => t.name === 'echo'), rec.dump());
      const r = await client.callTool({ name: 'echo', arguments: { text: 'v1' } }, undefined, REQUEST);
      assert.equal(textOf({ result: r }), 'v1');
      assertDiscovered(rec);
      assertAudienceBound(provider);
    } finally {
      await client.close();
    }
  });

  // SDK v1 1.32.2 asks the token endpoint for the provider's own scope only (fetchToken passes
  // clientMetadata.scope to prepareTokenRequest, never the challenge's): it retries a 403
  // insufficient_scope once with a new token of the same scope, so a client_credentials client
  // of v1 must be configured with the scopes its tools need. (v2 steps up: see below.)
  test('a provider configured with the scope a tool needs calls it (mcp-admin, scope mcp:admin)', TEST, async () => {
    const rec = recorder();
    const provider = new ClientCredentialsV1({
      clientId: 'mcp-admin', clientSecret: d.iss.secret('mcp-admin'), expectedIssuer: d.iss.issuer, scope: 'mcp:tools mcp:admin',
    });
    const client = new ClientV1({ name: 'mcpactord-auth-v1', version: '1.0.0' }, { capabilities: {} });
    const transport = new TransportV1(new URL(d.url), { authProvider: provider, fetch: rec.fetch });
    try {
      await client.connect(transport, REQUEST);
      const r = await client.callTool({ name: 'add', arguments: { a: 2, b: 2 } }, undefined, REQUEST);
      assert.equal(textOf({ result: r }), '4', rec.dump());
      assert.equal(assertAudienceBound(provider).scope, 'mcp:tools mcp:admin');
    } finally {
      await client.close();
    }
  });

  test('without it: 403 insufficient_scope, and the call fails (no step-up in v1)', TEST, async () => {
    const rec = recorder();
    const provider = new ClientCredentialsV1({ clientId: 'mcp-client', clientSecret: d.iss.secret('mcp-client'), expectedIssuer: d.iss.issuer });
    const client = new ClientV1({ name: 'mcpactord-auth-v1', version: '1.0.0' }, { capabilities: {} });
    const transport = new TransportV1(new URL(d.url), { authProvider: provider, fetch: rec.fetch });
    try {
      await client.connect(transport, REQUEST);
      await assert.rejects(client.callTool({ name: 'add', arguments: { a: 2, b: 2 } }, undefined, REQUEST), /403/);
      assert.ok(rec.seen.some((e) => e.status === 403), rec.dump());
      assertAudienceBound(provider);
    } finally {
      await client.close();
    }
  });
});

describe('SDK v2 (@modelcontextprotocol/client) with ClientCredentialsProvider', () => {
  for (const mode of [{ pin: MODERN }, 'legacy']) {
    test(`versionNegotiation ${JSON.stringify(mode)}: discovers, gets a token, calls echo`, TEST, async () => {
      const rec = recorder();
      const provider = new ClientCredentialsV2({ clientId: 'mcp-client', clientSecret: d.iss.secret('mcp-client'), expectedIssuer: d.iss.issuer });
      const client = new ClientV2({ name: 'mcpactord-auth-v2', version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode } });
      const transport = new TransportV2(new URL(d.url), { authProvider: provider, fetch: rec.fetch });
      try {
        await client.connect(transport, REQUEST);
        assert.equal(client.getProtocolEra(), mode === 'legacy' ? 'legacy' : 'modern');
        const r = await client.callTool({ name: 'echo', arguments: { text: 'v2' } }, REQUEST);
        assert.equal(textOf({ result: r }), 'v2', rec.dump());
        assertDiscovered(rec);
        assertAudienceBound(provider);
      } finally {
        await client.close();
      }
    });

    test(`versionNegotiation ${JSON.stringify(mode)}: a 403 insufficient_scope makes the client step up to the challenged scope`, TEST, async () => {
      const rec = recorder();
      const provider = new ClientCredentialsV2({ clientId: 'mcp-admin', clientSecret: d.iss.secret('mcp-admin'), expectedIssuer: d.iss.issuer });
      const client = new ClientV2({ name: 'mcpactord-auth-v2', version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode } });
      const transport = new TransportV2(new URL(d.url), { authProvider: provider, fetch: rec.fetch });
      try {
        await client.connect(transport, REQUEST);
        const r = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } }, REQUEST);
        assert.equal(textOf({ result: r }), '5', rec.dump());
        assert.ok(rec.seen.some((e) => e.status === 403), `a 403 first:\n${rec.dump()}`);
        assert.match(assertAudienceBound(provider).scope ?? '', /mcp:admin/);
      } finally {
        await client.close();
      }
    });
  }
});

describe('Inspector CLI with --header "Authorization: Bearer ..."', () => {
  const pkgDir = path.join(here, 'node_modules/@modelcontextprotocol/inspector');
  const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
  const INSPECTOR = path.join(pkgDir, pkg.bin['mcp-inspector']);
  let home;
  before(() => { home = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpd-inspector-home-')); });
  after(() => { if (home) fs.rmSync(home, { recursive: true, force: true }); });

  const inspector = (args) => new Promise((resolve) => {
    const child = spawn(process.execPath, [INSPECTOR, ...args], {
      cwd: home, env: { ...process.env, HOME: home, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60000, killSignal: 'SIGKILL',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (x) => { stdout += x; });
    child.stderr.on('data', (x) => { stderr += x; });
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  const base = (era) => ['--cli', d.url, '--transport', 'http', '--protocol-era', era, '--format', 'json',
    '--stored-auth-only', '--connect-timeout', '10000'];

  for (const era of ['modern', 'legacy']) {
    test(`${era}: tools/list with a token of the issuer`, { timeout: 70000 }, async () => {
      const token = await d.token('mcp-client', { scope: 'mcp:tools' });
      const run = await inspector([...base(era), '--method', 'tools/list', '--header', `Authorization: Bearer ${token}`]);
      assert.equal(run.code, 0, `exit status\n${run.stdout}\n${run.stderr}`);
      const out = JSON.parse(run.stdout);
      const names = (out.result?.tools ?? out.tools ?? []).map((t) => t.name);
      assert.ok(names.includes('echo'), run.stdout);
      assert.ok(!run.stdout.includes(token), 'the Inspector does not echo the token');
    });
  }

  test('modern: without a token the CLI stops at the 401 (no interactive login)', { timeout: 70000 }, async () => {
    const run = await inspector([...base('modern'), '--method', 'tools/list']);
    assert.notEqual(run.code, 0, `${run.stdout}\n${run.stderr}`);
  });
});

describe('a gateway path (/mcp/everything) behind the same authorization', () => {
  test('SDK v1 with ClientCredentialsProvider: discovers from its 401, gets a token for /mcp, calls the upstream\'s echo', TEST, async () => {
    const rec = recorder();
    const provider = new ClientCredentialsV1({ clientId: 'mcp-client', clientSecret: d.iss.secret('mcp-client'), expectedIssuer: d.iss.issuer });
    const client = new ClientV1({ name: 'mcpactord-auth-gateway', version: '1.0.0' }, { capabilities: {} });
    const transport = new TransportV1(new URL(`${d.url}/everything`), { authProvider: provider, fetch: rec.fetch });
    try {
      await client.connect(transport, REQUEST);
      assert.match(client.getServerVersion().name, /everything/i, 'the upstream answered initialize');
      const r = await client.callTool({ name: 'echo', arguments: { message: 'authorized' } }, undefined, REQUEST);
      assert.equal(textOf({ result: r }), 'Echo: authorized', rec.dump());
      assertDiscovered(rec);
      assertAudienceBound(provider);
      await transport.terminateSession();
    } finally {
      await client.close();
    }
  });

  test('without a token: 401 with the challenge, and no process is started', TEST, async () => {
    const started = async () => (await (await fetch(`http://127.0.0.1:${d.server.adminPort}/stats`)).json()).upstreams_started_total;
    const before0 = await started();
    const r = await fetch(`${d.url}/everything`, {
      method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
      signal: AbortSignal.timeout(10000),
    });
    assert.equal(r.status, 401);
    assert.match(r.headers.get('www-authenticate') ?? '', /resource_metadata="[^"]*oauth-protected-resource\/mcp"/);
    assert.equal(await started(), before0, 'no upstream process started for a request without a token');
  });
});
