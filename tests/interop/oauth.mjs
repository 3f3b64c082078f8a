// What the auth tests share: the authorization server (issuer.mjs, a real oidc-provider) started
// and restarted as a child process, signing keys made at test time, tokens from its token
// endpoint, JWTs signed by the test itself (with the issuer's own private key from the keys file,
// or with keys the issuer never published), and plain HTTP requests to mcpactord that return
// status, headers and the JSON-RPC messages. Every wait is bounded; only processes started here
// are ever killed.
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';

import { startServer } from './server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

export const MODERN = '2026-07-28';
export const LEGACY = '2025-11-25';
export const ACCEPT_BOTH = 'application/json, text/event-stream';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A port nothing listens on right now (bound and closed: the kernel does not hand it out again
// at once).
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export const b64url = (data) => Buffer.from(data).toString('base64url');

// ---- keys ----

// A new private key of type (crypto.generateKeyPairSync's) as a JWK. The key leaves the generation
// encoded (PKCS#8 DER) and is imported again before its JWK is exported: a KeyObject returned by
// generateKeyPairSync shares its lock with the generation job, and Node 20 (v20.20.2) takes that
// lock in the job's destructor. A garbage collection during the export (which holds the lock and
// allocates) finalizes the job and the process deadlocks, its event loop stopped: gdb in the
// interop watchdog showed ExportJWKRsaKey -> EncodeBignum -> Heap::CollectGarbage ->
// ~KeyGenJob -> uv_mutex_lock, and the auth suite hung once in about 40 runs.
export function newJwk(type, options) {
  const { privateKey } = crypto.generateKeyPairSync(type, {
    ...options,
    privateKeyEncoding: { type: 'pkcs8', format: 'der' },
    publicKeyEncoding: { type: 'spki', format: 'der' },
  });
  return crypto.createPrivateKey({ key: privateKey, format: 'der', type: 'pkcs8' }).export({ format: 'jwk' });
}

// A private JWK of alg (ES256, RS256, PS256, EdDSA) with kid.
export function generateKey(alg, kid = `${alg.toLowerCase()}-${crypto.randomBytes(4).toString('hex')}`) {
  const [type, options] = {
    ES256: ['ec', { namedCurve: 'P-256' }],
    RS256: ['rsa', { modulusLength: 2048 }],
    PS256: ['rsa', { modulusLength: 2048 }],
    EdDSA: ['ed25519', {}],
  }[alg];
  return { ...newJwk(type, options), kid, alg, use: 'sig' };
}

// A key set with one key per alg (the issuer signs with the first key of each alg).
export function generateKeySet(algs = ['ES256', 'RS256', 'PS256', 'EdDSA'], tag = '') {
  return { keys: algs.map((alg) => generateKey(alg, `${tag}${alg.toLowerCase()}-${crypto.randomBytes(4).toString('hex')}`)) };
}

// The public half of a private JWK.
export function publicJwk(jwk) {
  const { d, p, q, dp, dq, qi, ...pub } = jwk;
  return pub;
}

// Writes a JWKS to a file of mode 600 in dir; returns its path.
export function writeKeys(dir, keyset, name = `keys-${crypto.randomBytes(3).toString('hex')}.json`) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify(keyset), { mode: 0o600 });
  return file;
}

// ---- JWTs signed by the test ----

// Signs header.payload with a private JWK (its alg unless header.alg says otherwise), with an
// HMAC secret (Buffer) for HS256, or not at all for alg "none". Returns the compact JWS.
export function signJwt(header, payload, key) {
  const alg = header.alg ?? key?.alg;
  const head = { alg, typ: 'at+jwt', ...(key?.kid && { kid: key.kid }), ...header };
  for (const [name, value] of Object.entries(head)) if (value === undefined) delete head[name];
  const input = `${b64url(JSON.stringify(head))}.${b64url(JSON.stringify(payload))}`;
  let sig;
  if (String(alg).toLowerCase() === 'none') {
    sig = Buffer.alloc(0);
  } else if (alg === 'HS256') {
    sig = crypto.createHmac('sha256', key).update(input).digest();
  } else {
    const k = crypto.createPrivateKey({ key: key, format: 'jwk' });
    if (alg === 'ES256') sig = crypto.sign('sha256', Buffer.from(input), { key: k, dsaEncoding: 'ieee-p1363' });
    else if (alg === 'RS256') sig = crypto.sign('sha256', Buffer.from(input), k);
    else if (alg === 'PS256') {
      sig = crypto.sign('sha256', Buffer.from(input), {
        key: k, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 32,
      });
    } else if (alg === 'EdDSA') sig = crypto.sign(null, Buffer.from(input), k);
    else throw new Error(`signJwt: alg ${alg}`);
  }
  return `${input}.${b64url(sig)}`;
}

// The header and payload of a compact JWS (not verified).
export function decodeJwt(token) {
  const [h, p] = token.split('.');
  return { header: JSON.parse(Buffer.from(h, 'base64url')), payload: JSON.parse(Buffer.from(p, 'base64url')) };
}

// A DPoP proof (RFC 9449) signed with key (a private JWK; its public half goes in the header):
// htm, htu, and ath (the access token it goes with, hashed) unless token is undefined; claims and
// header override.
export function dpopProof(key, { htm = 'POST', htu, token, claims = {}, header = {} } = {}) {
  const payload = {
    jti: crypto.randomUUID(), htm, htu, iat: Math.floor(Date.now() / 1000),
    ...(token !== undefined && { ath: b64url(crypto.createHash('sha256').update(token).digest()) }),
    ...claims,
  };
  for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
  const { kid, use: _use, alg: _alg, ...pub } = publicJwk(key);
  return signJwt({ alg: key.alg, typ: 'dpop+jwt', jwk: pub, kid: undefined, ...header }, payload, { ...key, kid: undefined });
}

// The JWK SHA-256 thumbprint (RFC 7638) of a key: what cnf.jkt of a DPoP-bound token holds.
export function jwkThumbprint(key) {
  const pub = publicJwk(key);
  const members = { EC: ['crv', 'kty', 'x', 'y'], RSA: ['e', 'kty', 'n'], OKP: ['crv', 'kty', 'x'] }[pub.kty];
  const json = `{${members.map((m) => `"${m}":${JSON.stringify(pub[m])}`).join(',')}}`;
  return b64url(crypto.createHash('sha256').update(json).digest());
}

// ---- the authorization server ----

const ISSUER = path.join(here, 'issuer.mjs');

// Starts issuer.mjs. opts: port (0: any), resource (URL or list), keys (a file), ttl, alg,
// discovery, tls ({cert, key}: PEM files; https), timeoutMs. Resolves to a handle: {issuer, port, info (the ready line), log(),
// stop(), restart(newOpts)}.
export async function startIssuer(opts = {}) {
  const { port = 0, resource = [], keys, ttl, alg, discovery, tls, timeoutMs = 15000 } = opts;
  const args = [ISSUER, '--port', String(port)];
  for (const r of [resource].flat()) args.push('--resource', r);
  if (keys) args.push('--keys', keys);
  if (ttl) args.push('--ttl', String(ttl));
  if (alg) args.push('--alg', alg);
  if (discovery) args.push('--discovery', discovery);
  if (tls) args.push('--tls-cert', tls.cert, '--tls-key', tls.key);
  const proc = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (d) => { log += d; if (log.length > 200000) log = log.slice(-100000); });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const info = await new Promise((resolve) => {
    const lines = readline.createInterface({ input: proc.stdout });
    const timer = setTimeout(() => resolve(null), timeoutMs);
    lines.on('line', (line) => {
      if (!line.startsWith('{')) return;
      clearTimeout(timer);
      resolve(JSON.parse(line));
    });
    exited.then(() => resolve(null));
  });
  if (!info) {
    proc.kill('SIGKILL');
    throw new Error(`issuer.mjs did not start (${args.join(' ')}):\n${log}`);
  }
  let stopped = null;
  const handle = {
    ...info,
    info,
    log: () => log,
    secret: (id) => info.clients.find((c) => c.client_id === id)?.client_secret,
    // SIGTERM (SIGKILL after 5 s); resolves when it has exited and its port is free.
    stop() {
      if (!stopped) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
        stopped = exited.then((status) => { clearTimeout(timer); return status; });
      }
      return stopped;
    },
    // Stops it and starts a new one on the same port (the same issuer URL), with opts changed
    // by newOpts (e.g. {keys: rotatedFile}).
    async restart(newOpts = {}) {
      await handle.stop();
      return startIssuer({ ...opts, ...newOpts, port: info.port });
    },
  };
  return handle;
}

// fetch with a deadline that covers the body too (the body is read before it returns: read is
// (res) => res.text() or the like). The timer is cleared once the exchange is over, so no abort
// fires later on a finished request, as AbortSignal.timeout's would.
async function fetchWithin(url, init, timeoutMs, read) {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(new Error(`${init.method ?? 'GET'} ${url}: no answer within ${timeoutMs} ms`)), timeoutMs);
  try {
    const res = await fetch(url, { ...init, signal: ac.signal });
    return { res, body: await read(res) };
  } finally {
    clearTimeout(timer);
  }
}

// A token from the issuer's token endpoint (client_credentials, client_secret_basic). opts:
// scope, resource, dpop (a DPoP proof JWT). Resolves to the token response (throws on an error
// response).
export async function clientCredentials(iss, clientId, { scope, resource, dpop, secret } = {}) {
  const body = new URLSearchParams({ grant_type: 'client_credentials' });
  if (scope) body.set('scope', scope);
  if (resource) body.set('resource', resource);
  const { res, body: json } = await fetchWithin(iss.token_endpoint, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${clientId}:${secret ?? iss.secret(clientId)}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
      ...(dpop && { dpop }),
    },
    body,
  }, 10000, (r) => r.json());
  if (!res.ok) throw new Error(`token request of ${clientId} failed: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function tokenPost(url, clientId, secret, params) {
  const { res, body: text } = await fetchWithin(url, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams(params),
  }, 10000, (r) => r.text());
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

// RFC 7662 introspection as clientId (the resource server's own credentials).
export async function introspect(iss, token, clientId = 'mcp-introspector') {
  return (await tokenPost(iss.introspection_endpoint, clientId, iss.secret(clientId), { token })).json;
}

// RFC 7009 revocation by the client the token was issued to.
export async function revoke(iss, token, clientId) {
  const { status } = await tokenPost(iss.revocation_endpoint, clientId, iss.secret(clientId), { token });
  if (status !== 200) throw new Error(`revocation failed: ${status}`);
}

// ---- requests to mcpactord ----

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// The JSON-RPC messages of a response body (JSON or SSE).
export function messagesOf(contentType, text) {
  if ((contentType ?? '').includes('text/event-stream')) {
    return text.split('\n').filter((l) => l.startsWith('data:')).map((l) => parse(l.slice(5).trim())).filter(Boolean);
  }
  const json = parse(text);
  return json === undefined ? [] : [json].flat();
}

// One HTTP request to url; resolves to {status, headers (a Headers), text, json (a plain JSON
// body), messages, answer(id) (the JSON-RPC message with that id)}.
export async function httpRequest(url, { method = 'POST', headers = {}, body, timeoutMs = 20000 } = {}) {
  const { res, body: text } = await fetchWithin(url, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  }, timeoutMs, async (r) => {
    if (method === 'GET' && r.ok && (r.headers.get('content-type') ?? '').includes('text/event-stream')) {
      await r.body?.cancel().catch(() => {}); // a stream that stays open: only its head is read
      return '';
    }
    return r.text();
  });
  const messages = messagesOf(res.headers.get('content-type'), text);
  return {
    status: res.status,
    headers: res.headers,
    text,
    json: parse(text),
    messages,
    answer: (id) => messages.find((m) => m?.id === id),
  };
}

// A 2026-07-28 request's _meta and headers (see tests/integration/test_modern.py).
export function modernMeta(caps = {}) {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': caps,
    'io.modelcontextprotocol/clientInfo': { name: 'mcpactord-auth-test', version: '1' },
  };
}

const NAMED = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri' };

// A 2026-07-28 (stateless) JSON-RPC request: {body, headers} for httpRequest.
export function modernRequest(id, method, params = {}, { token, caps, headers = {} } = {}) {
  const p = { ...params, _meta: { ...modernMeta(caps), ...params._meta } };
  const h = {
    'content-type': 'application/json', accept: ACCEPT_BOTH, 'mcp-protocol-version': MODERN, 'mcp-method': method,
  };
  const field = NAMED[method];
  if (field && typeof p[field] === 'string') h['mcp-name'] = p[field];
  if (method.startsWith('tasks/') && typeof p.taskId === 'string') h['mcp-name'] = p.taskId;
  if (token !== undefined) h.authorization = `Bearer ${token}`;
  return { body: { jsonrpc: '2.0', id, method, params: p }, headers: { ...h, ...headers } };
}

// A session-era client over plain HTTP: initialize (+ notifications/initialized), then requests
// with Mcp-Session-Id. token: sent on every request (null: none).
export class SessionClient {
  constructor(url, token) {
    this.url = url;
    this.token = token;
    this.nextId = 1;
    this.sessionId = null;
  }

  headers(extra = {}) {
    return {
      'content-type': 'application/json',
      accept: ACCEPT_BOTH,
      ...(this.sessionId && { 'mcp-session-id': this.sessionId, 'mcp-protocol-version': LEGACY }),
      ...(this.token != null && { authorization: `Bearer ${this.token}` }),
      ...extra,
    };
  }

  // Resolves to the initialize response (check .status); keeps the session id.
  async initialize() {
    const id = this.nextId++;
    const r = await httpRequest(this.url, {
      headers: this.headers(),
      body: {
        jsonrpc: '2.0', id, method: 'initialize',
        params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'mcpactord-auth-test', version: '1' } },
      },
    });
    if (r.status === 200) {
      this.sessionId = r.headers.get('mcp-session-id');
      const n = await httpRequest(this.url, {
        headers: this.headers(), body: { jsonrpc: '2.0', method: 'notifications/initialized' },
      });
      if (n.status !== 202) throw new Error(`notifications/initialized: ${n.status} ${n.text}`);
    }
    return r;
  }

  // One request; resolves to httpRequest's answer plus .id.
  async request(method, params = {}, { headers, token } = {}) {
    const id = this.nextId++;
    const h = this.headers(headers);
    if (token !== undefined) h.authorization = `Bearer ${token}`;
    const r = await httpRequest(this.url, { headers: h, body: { jsonrpc: '2.0', id, method, params } });
    return { ...r, id };
  }
}

// Parses a WWW-Authenticate challenge of the Bearer scheme: {scheme, params}.
export function parseChallenge(value) {
  if (!value) return null;
  const m = /^\s*(\S+)\s*(.*)$/s.exec(value);
  const params = {};
  const re = /([A-Za-z_][\w-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))\s*,?/g;
  let p;
  while ((p = re.exec(m[2])) !== null) params[p[1].toLowerCase()] = p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : p[3];
  return { scheme: m[1], params };
}

// A self-signed certificate for 127.0.0.1 (the openssl program): {cert, key} PEM files in dir.
export function selfSignedCert(dir, name = 'tls') {
  const cert = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
  { encoding: 'utf8', timeout: 30000 });
  if (r.status !== 0) throw new Error(`openssl req failed: ${r.stderr}`);
  return { cert, key };
}

// A scratch directory, removed by the returned function.
export function scratchDir(prefix = 'mcpd-auth-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

// ---- the deployment of the auth tests ----

// In deploy's serverFlags: replaced by the path of the introspection credentials file.
export const INTROSPECT = '<the introspection credentials file>';

// Every token any test sent: none may appear in a server log.
export const tokensUsed = new Set();
export const use = (token) => {
  tokensUsed.add(token);
  return token;
};

// Asserts a JSON-RPC error body with the id echoed; returns the error.
export function assertRpcError(r, id, what = '') {
  const body = r.json;
  assert.ok(body && typeof body === 'object', `${what}: a JSON-RPC error body: ${r.status} ${r.text.slice(0, 500)}`);
  assert.equal(body.jsonrpc, '2.0', `${what}: ${r.text.slice(0, 500)}`);
  assert.equal(body.id, id, `${what}: the id is echoed: ${r.text.slice(0, 500)}`);
  assert.equal(typeof body.error?.code, 'number', `${what}: ${r.text.slice(0, 500)}`);
  assert.ok(body.error.message, `${what}: a message`);
  return body.error;
}

// Asserts the status and a Bearer challenge with resource_metadata=prm; error/scope: the
// expected parameters (undefined: must be absent; a string: that value). Returns the params.
export function assertChallenge(r, status, prm, { error, scope, what = '' } = {}) {
  assert.equal(r.status, status, `${what}: status ${r.status}: ${r.text.slice(0, 500)}`);
  const c = parseChallenge(r.headers.get('www-authenticate'));
  assert.ok(c, `${what}: a WWW-Authenticate header`);
  assert.equal(c.scheme.toLowerCase(), 'bearer', `${what}: ${r.headers.get('www-authenticate')}`);
  assert.equal(c.params.resource_metadata, prm, `${what}: ${r.headers.get('www-authenticate')}`);
  assert.equal(c.params.error, error, `${what}: error=: ${r.headers.get('www-authenticate')}`);
  if (scope !== null) assert.equal(c.params.scope, scope, `${what}: scope=: ${r.headers.get('www-authenticate')}`);
  return c.params;
}

export const textOf = (m) => m?.result?.content?.find((c) => c.type === 'text')?.text;

// One deployment: an issuer with a keys file the test owns, and mcpactord on a port chosen
// beforehand (its resource URL is what the tokens are for).
export async function deploy({ serverFlags = [], issuerOpts = {}, issuerUp = true, waitForKeys = true, serverEnv } = {}) {
  const scratch = scratchDir();
  const keyset = generateKeySet();
  const keysFile = writeKeys(scratch.dir, keyset);
  const port = await freePort();
  const resource = `http://127.0.0.1:${port}/mcp`;
  const issuerPort = await freePort();
  const iss = issuerUp ? await startIssuer({ port: issuerPort, resource, keys: keysFile, ...issuerOpts }) : null;
  const issuerUrl = `${issuerOpts.tls ? 'https' : 'http'}://127.0.0.1:${issuerPort}`;
  const introspectFile = path.join(scratch.dir, 'introspect');
  fs.writeFileSync(introspectFile, `mcp-introspector:${use('mcp-introspector-secret')}\n`, { mode: 0o600 });
  let server;
  try {
    server = await startServer(['--toolset', 'demo,conformance', '--auth-issuer', issuerUrl,
      '--auth-resource', resource, ...serverFlags.map((f) => (f === INTROSPECT ? introspectFile : f))],
    { listenPort: port, env: serverEnv });
  } catch (e) {
    await iss?.stop();
    scratch.remove();
    throw e;
  }
  const d = {
    scratch, keyset, keysFile, port, resource, issuerPort, issuerUrl, iss, server, introspectFile,
    url: resource,
    prm: `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`,
    // a token of the issuer for client (resource: this server unless given)
    async token(client = 'mcp-client', { scope, resource: res = resource } = {}) {
      const t = await clientCredentials(d.iss, client, { scope: scope ?? d.iss.clients.find((c) => c.client_id === client)?.scope, resource: res });
      return use(t.access_token);
    },
    // a token the test signs with the issuer's own key of alg (or key), claims over the defaults
    signed(claims = {}, { alg = 'ES256', key, header = {} } = {}) {
      const now = Math.floor(Date.now() / 1000);
      const k = key ?? d.keyset.keys.find((x) => x.alg === alg);
      const payload = {
        iss: issuerUrl, sub: 'mcp-client', client_id: 'mcp-client', aud: resource, scope: 'mcp:tools mcp:read',
        iat: now, exp: now + 300, jti: crypto.randomUUID(), ...claims,
      };
      for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
      return use(signJwt({ alg: k.alg, ...header }, payload, k));
    },
    // a 2026-07-28 request with token (undefined: no Authorization header)
    async modern(id, method, params, token, extra = {}) {
      const { body, headers } = modernRequest(id, method, params, { token, ...extra });
      return httpRequest(resource, { headers, body });
    },
    // Until the server has the issuer's key set (its first fetch runs in the background after
    // the start: a token meanwhile gets 503): a signed token is asked with, at most timeoutMs.
    async keysReady(timeoutMs = 15000) {
      const deadline = Date.now() + timeoutMs;
      for (let i = 0; ; i++) {
        const r = await d.modern(1, 'tools/list', {}, d.signed({}));
        if (r.status !== 503) return r;
        if (Date.now() > deadline) throw new Error(`mcpactord has no key set after ${timeoutMs} ms: ${r.text}`);
        await sleep(200);
      }
    },
    async stop() {
      const srv = d.server; // (a test may have restarted it)
      const log = fs.existsSync(srv.logPath) ? fs.readFileSync(srv.logPath, 'utf8') : '';
      const status = await srv.stop();
      await d.iss?.stop();
      scratch.remove();
      return { status, log };
    },
  };
  if (iss && waitForKeys) {
    try {
      await d.keysReady();
    } catch (e) {
      await d.stop();
      throw e;
    }
  }
  return d;
}

// No token of tokensUsed in log (the whole token, and its signature part).
export function assertNoTokenIn(log, what) {
  for (const token of tokensUsed) {
    if (token.length < 16) continue;
    assert.ok(!log.includes(token), `${what}: a token is in the server log: ${token.slice(0, 24)}...`);
    const sig = token.split('.')[2];
    if (sig && sig.length >= 16) assert.ok(!log.includes(sig), `${what}: a token's signature is in the server log`);
  }
}

