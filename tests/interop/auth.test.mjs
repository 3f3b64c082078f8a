// mcpactord as an OAuth 2.1 resource server (issue 22), end to end against a real authorization
// server: issuer.mjs (panva's oidc-provider, pinned) on a free port, and the real mcpactord
// started with --auth-issuer and --auth-resource http://127.0.0.1:<port>/mcp. Covered: discovery
// (the 401 challenge, Protected Resource Metadata at both paths, the issuer's metadata), JWT
// access tokens from the issuer (ES256, RS256, PS256, EdDSA) in both eras, every way a token is
// refused (audience of another resource, changed signature, changed claims, alg none, HMAC with
// the public key, unknown kid, expired, not yet valid, wrong issuer, huge, garbage), scopes per
// tool (403 insufficient_scope) and a required scope (every method, GET and DELETE too),
// principals (another client's session, handle, requestState and task; a new token of the same
// client goes on), exp of a cached token (--auth-leeway 1), opaque tokens by introspection, their
// revocation and the issuer down meanwhile, key rotations at the issuer, the issuer down (503 +
// Retry-After, then up), an RFC 8414-only issuer, an https issuer (SSL_CERT_FILE), CORS beside
// auth, and that no token ever reaches the server's log. Run by `meson test --suite interop`
// (node's built-in test runner); every wait is bounded and only the processes started here are
// stopped. Needs the openssl program (the https issuer's certificate).
//
// The test owns the issuer's keys file, so it can also sign tokens with the issuer's own private
// key: that is how exp/nbf/iat, iss and aud are checked precisely.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { describe, test } from 'node:test';
import { after, before } from './hooks.mjs';

import {
  INTROSPECT, SessionClient, assertChallenge, assertNoTokenIn, assertRpcError, clientCredentials, decodeJwt,
  deploy, generateKey, generateKeySet, httpRequest, introspect, modernRequest, parseChallenge, publicJwk, revoke,
  scratchDir, selfSignedCert, sleep, startIssuer, textOf, use, writeKeys,
} from './oauth.mjs';

const TEST = { timeout: 60000 };
const SCOPES = 'mcp:tools mcp:read mcp:admin';
const TASKS_EXT = 'io.modelcontextprotocol/tasks';

// A token refused by d: 401 invalid_token, the challenge, the JSON-RPC error with the id echoed.
// keyFetch: the server may first answer 503 + Retry-After while it fetches the key set for an
// unknown kid (then it is asked again, a few times, after Retry-After).
async function refusedIn(d, token, what, { id = 40, keyFetch = false } = {}) {
  let r;
  for (let attempt = 0; ; attempt++) {
    r = await d.modern(id, 'tools/call', { name: 'echo', arguments: { text: 'x' } }, token);
    if (!(keyFetch && r.status === 503 && attempt < 5)) break;
    const retryAfter = r.headers.get('retry-after');
    assert.match(retryAfter ?? '', /^\d+$/, `${what}: 503 with Retry-After`);
    assertRpcError(r, id, what);
    await sleep(Math.min(Number(retryAfter), 3) * 1000);
  }
  assertChallenge(r, 401, d.prm, { error: 'invalid_token', what, scope: null });
  assertRpcError(r, id, what);
  return r;
}

describe('mcpactord behind oidc-provider', () => {
  let d;
  before(async () => {
    d = await deploy({
      serverFlags: ['--auth-scopes', SCOPES, '--auth-tool-scope', 'add=mcp:admin'],
    });
  });
  after(async () => {
    if (!d) return;
    const { status, log } = await d.stop();
    assertNoTokenIn(log, 'mcpactord behind oidc-provider');
    assert.deepEqual(status, { code: 0, signal: null }, 'the server exits 0 on SIGTERM');
  });

  // ---- discovery ----

  test('no token: 401 with the resource_metadata challenge, both eras, POST, GET and DELETE', TEST, async () => {
    const m = await d.modern(7, 'tools/list', {}, undefined);
    assertChallenge(m, 401, d.prm, { what: 'modern POST' });
    assertRpcError(m, 7, 'modern POST');

    // a call of a tool that needs a scope: the challenge names it (the spec's scope selection)
    const add = await d.modern(8, 'tools/call', { name: 'add', arguments: { a: 1, b: 2 } }, undefined);
    assertChallenge(add, 401, d.prm, { scope: 'mcp:admin', what: 'modern tools/call add' });
    assertRpcError(add, 8, 'modern tools/call add');

    const s = new SessionClient(d.url, null);
    const init = await s.initialize();
    assertChallenge(init, 401, d.prm, { what: 'initialize' });
    assertRpcError(init, 1, 'initialize');

    for (const method of ['GET', 'DELETE']) {
      const r = await httpRequest(d.url, {
        method, headers: { accept: 'text/event-stream', 'mcp-session-id': 'a'.repeat(32), 'mcp-protocol-version': '2025-11-25' },
      });
      assertChallenge(r, 401, d.prm, { what: method });
      assertRpcError(r, null, method);
    }
  });

  test('Protected Resource Metadata at both paths, without a token', TEST, async () => {
    for (const url of [d.prm, `http://127.0.0.1:${d.port}/.well-known/oauth-protected-resource`]) {
      const r = await httpRequest(url, { method: 'GET', headers: { accept: 'application/json' } });
      assert.equal(r.status, 200, `${url}: ${r.status} ${r.text}`);
      assert.match(r.headers.get('content-type') ?? '', /application\/json/, url);
      const prm = r.json;
      assert.equal(prm.resource, d.resource, r.text);
      assert.deepEqual(prm.authorization_servers, [d.iss.issuer], r.text);
      assert.deepEqual([...prm.scopes_supported].sort(), SCOPES.split(' ').sort(), r.text);
      assert.deepEqual(prm.bearer_methods_supported, ['header'], r.text);
    }
  });

  test("the issuer's metadata, found from the PRM as a client would", TEST, async () => {
    const prm = (await httpRequest(d.prm, { method: 'GET' })).json;
    const as = prm.authorization_servers[0];
    // RFC 8414 first, then OpenID discovery (oidc-provider serves the latter)
    let meta;
    for (const wk of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const r = await httpRequest(`${as}${wk}`, { method: 'GET' });
      if (r.status === 200) {
        meta = r.json;
        break;
      }
    }
    assert.ok(meta, 'the issuer has metadata');
    assert.equal(meta.issuer, as);
    assert.equal(meta.jwks_uri, d.iss.jwks_uri);
    assert.ok(meta.grant_types_supported.includes('client_credentials'));
  });

  // ---- tokens of the issuer ----

  test('session era: initialize and tools/call with a JWT of the issuer; every request needs it', TEST, async () => {
    const token = await d.token();
    const { header, payload } = decodeJwt(token);
    assert.equal(header.typ, 'at+jwt');
    assert.equal(payload.aud, d.resource);
    const s = new SessionClient(d.url, token);
    const init = await s.initialize();
    assert.equal(init.status, 200, init.text);
    assert.ok(s.sessionId, 'a session id');
    const call = await s.request('tools/call', { name: 'echo', arguments: { text: 'hi' } });
    assert.equal(call.status, 200, call.text);
    assert.equal(textOf(call.answer(call.id)), 'hi', call.text);
    const { authorization, ...without } = s.headers();
    const bare = await httpRequest(d.url, { headers: without, body: { jsonrpc: '2.0', id: 99, method: 'tools/list', params: {} } });
    assertChallenge(bare, 401, d.prm, { what: 'a session request without the token' });
    assertRpcError(bare, 99, 'a session request without the token');
    const wrong = await s.request('tools/list', {}, { token: 'not-a-token' });
    assertChallenge(wrong, 401, d.prm, { error: 'invalid_token', what: 'a session request with a bad token', scope: null });
    assertRpcError(wrong, wrong.id, 'a session request with a bad token');
    const del = await httpRequest(d.url, { method: 'DELETE', headers: s.headers() });
    assert.ok([200, 202, 204].includes(del.status), `DELETE with the token: ${del.status} ${del.text}`);
  });

  test('2026-07-28: tools/list and tools/call with a JWT of the issuer', TEST, async () => {
    const token = await d.token();
    const list = await d.modern(1, 'tools/list', {}, token);
    assert.equal(list.status, 200, list.text);
    const names = list.answer(1).result.tools.map((t) => t.name);
    for (const n of ['echo', 'add', 'slow_compute']) assert.ok(names.includes(n), `${n} listed: ${names}`);
    const call = await d.modern(2, 'tools/call', { name: 'echo', arguments: { text: 'modern' } }, token);
    assert.equal(call.status, 200, call.text);
    assert.equal(textOf(call.answer(2)), 'modern', call.text);
    assert.equal(call.headers.get('mcp-session-id'), null);
  });

  for (const client of ['mcp-es256', 'mcp-rs256', 'mcp-ps256', 'mcp-eddsa']) {
    test(`a JWT signed by the issuer with ${decodeAlg(client)} (${client})`, TEST, async () => {
      const token = await d.token(client, { scope: 'mcp:tools' });
      assert.equal(decodeJwt(token).header.alg, decodeAlg(client));
      const call = await d.modern(3, 'tools/call', { name: 'echo', arguments: { text: client } }, token);
      assert.equal(call.status, 200, call.text);
      assert.equal(textOf(call.answer(3)), client);
    });
  }

  test('a token the test signs with the issuer key is accepted (the control of the cases below)', TEST, async () => {
    for (const alg of ['ES256', 'RS256', 'PS256', 'EdDSA']) {
      const r = await d.modern(4, 'tools/call', { name: 'echo', arguments: { text: alg } }, d.signed({}, { alg }));
      assert.equal(r.status, 200, `${alg}: ${r.text}`);
      assert.equal(textOf(r.answer(4)), alg);
    }
    // plain JWT typ (RFC 9068 asks for at+jwt; the issue accepts JWT too), aud as an array
    const plain = await d.modern(5, 'tools/call', { name: 'echo', arguments: { text: 'typ' } }, d.signed({}, { header: { typ: 'JWT' } }));
    assert.equal(plain.status, 200, `typ JWT: ${plain.text}`);
    const arr = await d.modern(6, 'tools/call', { name: 'echo', arguments: { text: 'aud' } },
      d.signed({ aud: ['http://127.0.0.1:1/other', d.resource] }));
    assert.equal(arr.status, 200, `aud array: ${arr.text}`);
    // within the default leeway (30 s): expired 5 s ago
    const skew = await d.modern(7, 'tools/call', { name: 'echo', arguments: { text: 'skew' } },
      d.signed({ exp: Math.floor(Date.now() / 1000) - 5 }));
    assert.equal(skew.status, 200, `exp 5 s ago (leeway): ${skew.text}`);
  });

  // ---- refused tokens: 401 invalid_token, the JSON-RPC error with the id echoed ----

  const refused = (token, what, opts) => refusedIn(d, token, what, opts);

  test('a token of the issuer for another resource (aud): 401 invalid_token', TEST, async () => {
    const other = await d.token('mcp-client', { resource: 'http://127.0.0.1:1/mcp' });
    assert.equal(decodeJwt(other).payload.aud, 'http://127.0.0.1:1/mcp');
    await refused(other, 'aud of another resource', { id: 41 });
    // the same URL but another path, and with a trailing slash
    await refused(d.signed({ aud: `http://127.0.0.1:${d.port}/other` }), 'aud another path', { id: 42 });
    await refused(d.signed({ aud: `${d.resource}/` }), 'aud with a trailing slash', { id: 43 });
    await refused(d.signed({ aud: undefined }), 'no aud', { id: 44 });
  });

  test('a changed signature and changed claims: 401', TEST, async () => {
    const token = await d.token();
    const [h, p, s] = token.split('.');
    const sig = Buffer.from(s, 'base64url');
    sig[sig.length >> 1] ^= 0x01;
    await refused(`${h}.${p}.${sig.toString('base64url')}`, 'a bit of the signature flipped', { id: 50 });
    await refused(`${h}.${p}.`, 'no signature', { id: 51 });
    await refused(`${h}.${p}`, 'two parts', { id: 52 });
    const claims = JSON.parse(Buffer.from(p, 'base64url'));
    for (const [i, change] of [{ scope: `${claims.scope} mcp:admin` }, { sub: 'mcp-admin' }, { exp: claims.exp + 3600 }].entries()) {
      const changed = Buffer.from(JSON.stringify({ ...claims, ...change })).toString('base64url');
      await refused(`${h}.${changed}.${s}`, `changed claims ${JSON.stringify(change)}`, { id: 53 + i });
    }
    // the header changed (another kid of the set), the signature kept
    const head = JSON.parse(Buffer.from(h, 'base64url'));
    const otherKid = d.keyset.keys.find((k) => k.kid !== head.kid).kid;
    await refused(`${Buffer.from(JSON.stringify({ ...head, kid: otherKid })).toString('base64url')}.${p}.${s}`, 'kid changed', { id: 57 });
  });

  test('alg none and HMAC with the public key as the secret: 401', TEST, async () => {
    const es = d.keyset.keys.find((k) => k.alg === 'ES256');
    const rsa = d.keyset.keys.find((k) => k.alg === 'RS256');
    await refused(d.signed({}, { header: { alg: 'none' } }), 'alg none with kid', { id: 60 });
    await refused(d.signed({}, { header: { alg: 'none', kid: undefined } }), 'alg none without kid', { id: 61 });
    await refused(d.signed({}, { header: { alg: 'NONE' } }), 'alg NONE', { id: 62 });
    let id = 63;
    for (const k of [es, rsa]) {
      const pub = crypto.createPublicKey({ key: publicJwk(k), format: 'jwk' });
      const secrets = [
        Buffer.from(pub.export({ type: 'spki', format: 'pem' })),
        pub.export({ type: 'spki', format: 'der' }),
        Buffer.from(JSON.stringify(publicJwk(k))),
      ];
      for (const secret of secrets) {
        await refused(d.signed({}, { key: secret, header: { alg: 'HS256', kid: k.kid } }), `HS256 with ${k.kid}'s public key`, { id: id++ });
      }
    }
  });

  test('a kid the issuer never published, and a known kid with another key: 401 (the issuer is up)', TEST, async () => {
    const stranger = generateKey('ES256', 'never-published');
    await refused(d.signed({}, { key: stranger }), 'unknown kid', { id: 70, keyFetch: true });
    const known = d.keyset.keys.find((k) => k.alg === 'ES256').kid;
    await refused(d.signed({}, { key: { ...stranger, kid: known } }), 'a known kid, another key', { id: 71 });
    await refused(d.signed({}, { key: { ...stranger, kid: undefined } }), 'no kid, a key not in the set', { id: 72, keyFetch: true });
    // a flood of forged kids: still 401 each, quickly (the refetch has a cooldown)
    const t0 = Date.now();
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) =>
      d.modern(100 + i, 'tools/list', {}, d.signed({}, { key: generateKey('ES256', `forged-${i}`) }))));
    for (const r of results) assert.ok([401, 503].includes(r.status), `a forged kid: ${r.status} ${r.text}`);
    assert.ok(Date.now() - t0 < 20000, `50 forged kids answered in ${Date.now() - t0} ms`);
    const jwksFetches = (d.iss.log().match(/GET \/jwks /g) ?? []).length;
    assert.ok(jwksFetches <= 10, `the flood of forged kids made ${jwksFetches} key set fetches`);
  });

  test('expired, not yet valid, issued in the future, another issuer: 401', TEST, async () => {
    const now = Math.floor(Date.now() / 1000);
    await refused(d.signed({ exp: now - 3600, iat: now - 7200 }), 'expired an hour ago', { id: 80 });
    await refused(d.signed({ exp: now - 120, iat: now - 400 }), 'expired 2 minutes ago (past the leeway)', { id: 81 });
    await refused(d.signed({ nbf: now + 3600 }), 'nbf in an hour', { id: 82 });
    await refused(d.signed({ iat: now + 3600, exp: now + 7200 }), 'iat in an hour', { id: 83 });
    await refused(d.signed({ exp: undefined }), 'no exp', { id: 84 });
    await refused(d.signed({ iss: 'http://127.0.0.1:1' }), 'another iss', { id: 85 });
    await refused(d.signed({ iss: `${d.issuerUrl}/` }), 'iss with a trailing slash', { id: 86 });
    await refused(d.signed({ iss: undefined }), 'no iss', { id: 87 });
    await refused(d.signed({ exp: String(now + 300) }), 'exp a string', { id: 88 });
  });

  test('garbage and huge tokens: refused, the server still serves', TEST, async () => {
    const bad = ['garbage', 'a.b.c', '...', 'eyJ.eyJ.', `${Buffer.from('{"alg":"ES256"}').toString('base64url')}.e30.AAAA`,
      Buffer.from(crypto.randomBytes(48)).toString('base64'), '%00%ff', 'x'.repeat(4096)];
    let id = 90;
    for (const token of bad) await refused(use(token), `garbage ${JSON.stringify(token.slice(0, 30))}`, { id: id++ });
    // another scheme, an empty Bearer
    for (const authorization of ['Basic bWNwLWNsaWVudDpzZWNyZXQ=', 'Bearer', 'Bearer ', 'bearer  ']) {
      const { body, headers } = modernRequest(id, 'tools/list', {}, {});
      const r = await httpRequest(d.url, { headers: { ...headers, authorization }, body });
      assert.equal(r.status, 401, `${authorization}: ${r.status} ${r.text}`);
      assertRpcError(r, id++, authorization);
      assert.equal(parseChallenge(r.headers.get('www-authenticate'))?.params.resource_metadata, d.prm);
    }
    // 100 KB: 401, or refused as too large (400, 413, 431); never a crash
    const huge = use(`${'A'.repeat(50000)}.${'B'.repeat(50000)}.${'C'.repeat(2000)}`);
    const { body, headers } = modernRequest(id, 'tools/list', {}, { token: huge });
    let status;
    try {
      status = (await httpRequest(d.url, { headers, body })).status;
    } catch {
      status = 'closed';
    }
    assert.ok([400, 401, 413, 431, 'closed'].includes(status), `a 100 KB token: ${status}`);
    const ok = await d.modern(200, 'tools/call', { name: 'echo', arguments: { text: 'alive' } }, await d.token());
    assert.equal(ok.status, 200, `the server still serves: ${ok.text}`);
  });

  // ---- scopes ----

  test('a tool that needs a scope the token lacks: 403 insufficient_scope, both eras; tools/list still lists it', TEST, async () => {
    const token = await d.token('mcp-client'); // mcp:tools mcp:read
    const r = await d.modern(300, 'tools/call', { name: 'add', arguments: { a: 1, b: 2 } }, token);
    assertChallenge(r, 403, d.prm, { error: 'insufficient_scope', scope: 'mcp:admin', what: 'modern add' });
    assertRpcError(r, 300, 'modern add');
    const list = await d.modern(301, 'tools/list', {}, token);
    assert.ok(list.answer(301).result.tools.some((t) => t.name === 'add'), 'add is listed');
    const echo = await d.modern(302, 'tools/call', { name: 'echo', arguments: { text: 'ok' } }, token);
    assert.equal(echo.status, 200, echo.text);

    const s = new SessionClient(d.url, token);
    assert.equal((await s.initialize()).status, 200);
    const call = await s.request('tools/call', { name: 'add', arguments: { a: 1, b: 2 } });
    assertChallenge(call, 403, d.prm, { error: 'insufficient_scope', scope: 'mcp:admin', what: 'session add' });
    assertRpcError(call, call.id, 'session add');
    const again = await s.request('tools/call', { name: 'echo', arguments: { text: 'still' } });
    assert.equal(again.status, 200, `the session goes on: ${again.text}`);
  });

  test('with the scope the tool works, both eras', TEST, async () => {
    const token = await d.token('mcp-admin');
    const r = await d.modern(310, 'tools/call', { name: 'add', arguments: { a: 2, b: 3 } }, token);
    assert.equal(r.status, 200, r.text);
    assert.equal(textOf(r.answer(310)), '5');
    const s = new SessionClient(d.url, token);
    assert.equal((await s.initialize()).status, 200);
    const call = await s.request('tools/call', { name: 'add', arguments: { a: 1, b: 1 } });
    assert.equal(textOf(call.answer(call.id)), '2', call.text);
  });

  // ---- principals: issuer + sub ----

  test("another principal gets 404 on a session, and cannot use a handle, a requestState or a task", TEST, async () => {
    const mine = await d.token('mcp-client');
    const theirs = await d.token('mcp-other', { scope: 'mcp:tools mcp:read' });
    const s = new SessionClient(d.url, mine);
    assert.equal((await s.initialize()).status, 200);
    const post = await s.request('tools/list', {}, { token: theirs });
    assert.equal(post.status, 404, `POST on another principal's session: ${post.text}`);
    assertRpcError(post, post.id, 'POST of another principal');
    for (const method of ['GET', 'DELETE']) {
      const r = await httpRequest(d.url, { method, headers: { ...s.headers({ accept: 'text/event-stream' }), authorization: `Bearer ${theirs}` } });
      assert.equal(r.status, 404, `${method} on another principal's session: ${r.status} ${r.text}`);
    }
    const still = await s.request('tools/call', { name: 'echo', arguments: { text: 'mine' } });
    assert.equal(textOf(still.answer(still.id)), 'mine', `the owner's session is intact: ${still.text}`);
    // the principal is issuer + sub, not the token: a new token of the same client goes on with it
    const renewed = await d.token('mcp-client');
    assert.notEqual(renewed, mine);
    const next = await s.request('tools/call', { name: 'echo', arguments: { text: 'renewed' } }, { token: renewed });
    assert.equal(textOf(next.answer(next.id)), 'renewed', `a new token of the same principal: ${next.text}`);
    // and a token the test signs for the same iss + sub too
    const signedByTest = await s.request('tools/call', { name: 'echo', arguments: { text: 'own' } }, { token: d.signed({}) });
    assert.equal(textOf(signedByTest.answer(signedByTest.id)), 'own', `a token of the same iss + sub: ${signedByTest.text}`);

    // a state handle
    const made = await d.modern(400, 'tools/call', { name: 'new_counter', arguments: {} }, mine);
    const handle = made.answer(400)?.result?.structuredContent?.handle;
    assert.ok(handle, made.text);
    const count = (token, id) => d.modern(id, 'tools/call', { name: 'counter', arguments: { handle, by: 1 } }, token,
      { headers: { 'mcp-param-handle': handle } });
    const foreign = await count(theirs, 401);
    const fm = foreign.answer(401);
    assert.ok(fm?.error || fm?.result?.isError, `another principal's handle is refused: ${foreign.text}`);
    assert.match(JSON.stringify(fm), /unknown handle/, foreign.text);
    const own = await count(mine, 402);
    assert.equal(textOf(own.answer(402)), '1', `the owner's handle counts once: ${own.text}`);

    // a requestState
    const first = await d.modern(410, 'tools/call', { name: 'elicit_name', arguments: {} }, mine, { caps: { elicitation: {} } });
    const res = first.answer(410)?.result;
    assert.equal(res?.resultType, 'input_required', first.text);
    const [key] = Object.keys(res.inputRequests);
    const retry = (token, id) => d.modern(id, 'tools/call', {
      name: 'elicit_name', arguments: {}, inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } },
      requestState: res.requestState,
    }, token, { caps: { elicitation: {} } });
    const stolen = await retry(theirs, 411);
    assert.equal(stolen.answer(411)?.error?.code, -32602, `another principal's requestState: ${stolen.text}`);
    const done = await retry(mine, 412);
    assert.equal(textOf(done.answer(412)), 'Hello, Ada!', done.text);

    // a task
    const caps = { extensions: { [TASKS_EXT]: {} } };
    const started = await d.modern(420, 'tools/call', { name: 'slow_compute', arguments: { seconds: 60, label: 'mine' } }, mine, { caps });
    const taskId = started.answer(420)?.result?.taskId;
    assert.ok(taskId, started.text);
    for (const [i, method] of ['tasks/get', 'tasks/cancel'].entries()) {
      const r = await d.modern(421 + i, method, { taskId }, theirs, { caps });
      assert.equal(r.answer(421 + i)?.error?.code, -32602, `${method} of another principal's task: ${r.text}`);
    }
    const got = await d.modern(423, 'tasks/get', { taskId }, mine, { caps });
    assert.equal(got.answer(423)?.result?.status, 'working', got.text);
    await d.modern(424, 'tasks/cancel', { taskId }, mine, { caps });
  });

  test('the PRM does not advertise offline_access', TEST, async () => {
    const r = await httpRequest(d.prm, { method: 'GET' });
    assert.equal(r.status, 200);
    assert.ok(!r.json.scopes_supported.includes('offline_access'));
  });
});

describe('opaque tokens: --auth-introspect (RFC 7662) and --auth-introspection-cache 1', () => {
  let d;
  before(async () => {
    d = await deploy({ serverFlags: ['--auth-introspect', INTROSPECT, '--auth-introspection-cache', '1'] });
  });
  after(async () => {
    if (!d) return;
    const { status, log } = await d.stop();
    assertNoTokenIn(log, 'introspection');
    assert.deepEqual(status, { code: 0, signal: null });
  });


  test('an opaque token is accepted by introspection; refused once revoked and the cache (1 s) passed', TEST, async () => {
    const token = await d.token('mcp-opaque', { scope: 'mcp:tools' });
    assert.equal(token.split('.').length, 1, 'an opaque token');
    assert.equal((await introspect(d.iss, token)).active, true);
    const call = (id) => d.modern(id, 'tools/call', { name: 'echo', arguments: { text: 'opaque' } }, token);
    const r = await call(500);
    assert.equal(r.status, 200, r.text);
    assert.equal(textOf(r.answer(500)), 'opaque');
    await revoke(d.iss, token, 'mcp-opaque');
    assert.equal((await introspect(d.iss, token)).active, false, 'revoked at the issuer');
    await sleep(2100); // past --auth-introspection-cache 1
    const gone = await call(501);
    assertChallenge(gone, 401, d.prm, { error: 'invalid_token', what: 'revoked', scope: null });
    assertRpcError(gone, 501, 'revoked');
  });

  test('opaque tokens of another audience, or of none: 401', TEST, async () => {
    const other = await d.token('mcp-opaque', { scope: 'mcp:tools', resource: 'http://127.0.0.1:1/mcp' });
    assert.equal((await introspect(d.iss, other)).aud, 'http://127.0.0.1:1/mcp');
    await refusedIn(d, other, 'opaque, another aud', { id: 510 });
    const none = (await clientCredentials(d.iss, 'mcp-client', { scope: 'mcp:tools' })).access_token;
    use(none);
    assert.equal((await introspect(d.iss, none)).active, true);
    await refusedIn(d, none, 'opaque, no aud', { id: 511 });
    await refusedIn(d, use(crypto.randomBytes(32).toString('base64url')), 'opaque, unknown to the issuer', { id: 512 });
  });

  test('a JWT of the issuer is still verified in the process beside introspection', TEST, async () => {
    const r = await d.modern(520, 'tools/call', { name: 'echo', arguments: { text: 'jwt' } }, await d.token());
    assert.equal(r.status, 200, r.text);
  });

  test('the issuer down: an opaque token not yet introspected gets 503 + Retry-After, not 401', TEST, async () => {
    const token = await d.token('mcp-opaque', { scope: 'mcp:tools' });
    await d.iss.stop();
    const r = await d.modern(531, 'tools/call', { name: 'echo', arguments: { text: 'down' } }, token);
    assert.equal(r.status, 503, `${r.status} ${r.text}`);
    assert.match(r.headers.get('retry-after') ?? '', /^\d+$/, 'Retry-After in seconds');
    assertRpcError(r, 531, 'introspection, the issuer down');
    // the issuer back (a new process: it has forgotten its opaque tokens)
    d.iss = await startIssuer({ port: d.issuerPort, resource: d.resource, keys: d.keysFile });
    await sleep(1500); // past --auth-introspection-cache 1
    await refusedIn(d, token, 'an opaque token the issuer no longer knows', { id: 532, keyFetch: true });
  });
});

describe('--auth-required-scope', () => {
  let d;
  before(async () => {
    d = await deploy({ serverFlags: ['--auth-required-scope', 'mcp:read'] });
  });
  after(async () => {
    if (!d) return;
    const { status, log } = await d.stop();
    assertNoTokenIn(log, '--auth-required-scope');
    assert.deepEqual(status, { code: 0, signal: null });
  });

  test('the 401 challenge names the required scope; a token without it gets 403, with it 200', TEST, async () => {
    const none = await d.modern(1, 'tools/list', {}, undefined);
    assertChallenge(none, 401, d.prm, { scope: 'mcp:read', what: 'no token' });
    const narrow = await d.token('mcp-client', { scope: 'mcp:tools' });
    const r = await d.modern(2, 'tools/list', {}, narrow);
    assertChallenge(r, 403, d.prm, { error: 'insufficient_scope', scope: 'mcp:read', what: 'without mcp:read' });
    assertRpcError(r, 2, 'without mcp:read');
    const wide = await d.token('mcp-client', { scope: 'mcp:tools mcp:read' });
    const ok = await d.modern(3, 'tools/call', { name: 'echo', arguments: { text: 'read' } }, wide);
    assert.equal(ok.status, 200, ok.text);
    const prm = (await httpRequest(d.prm, { method: 'GET' })).json;
    assert.ok(prm.scopes_supported.includes('mcp:read'), `scopes_supported by default names the flags' scopes: ${JSON.stringify(prm)}`);

    // the session era: every method, GET and DELETE too, needs it
    const s = new SessionClient(d.url, wide);
    assert.equal((await s.initialize()).status, 200);
    const post = await s.request('tools/list', {}, { token: narrow });
    assertChallenge(post, 403, d.prm, { error: 'insufficient_scope', scope: 'mcp:read', what: 'session POST without mcp:read' });
    assertRpcError(post, post.id, 'session POST without mcp:read');
    for (const method of ['GET', 'DELETE']) {
      const r = await httpRequest(d.url, { method, headers: { ...s.headers({ accept: 'text/event-stream' }), authorization: `Bearer ${narrow}` } });
      assertChallenge(r, 403, d.prm, { error: 'insufficient_scope', scope: 'mcp:read', what: `${method} without mcp:read` });
    }
    const again = await s.request('tools/call', { name: 'echo', arguments: { text: 'still' } });
    assert.equal(textOf(again.answer(again.id)), 'still', again.text);
  });
});

// Sends tools/call echo with token until it is answered 200 (at most timeoutMs); in between only
// 503 with Retry-After (a key set being fetched) or 401 (the refetch cooldown) are allowed.
// Returns the 200 response.
async function eventually(d, id, token, what, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  const seen = [];
  for (;;) {
    const r = await d.modern(id, 'tools/call', { name: 'echo', arguments: { text: 'eventually' } }, token);
    seen.push(r.status);
    if (r.status === 200) {
      assert.equal(textOf(r.answer(id)), 'eventually', r.text);
      return r;
    }
    assert.ok([401, 503].includes(r.status), `${what}: ${r.status} ${r.text}`);
    if (r.status === 503) assert.match(r.headers.get('retry-after') ?? '', /^\d+$/, `${what}: 503 with Retry-After`);
    assertRpcError(r, id, what);
    assert.ok(Date.now() < deadline, `${what}: not accepted within ${timeoutMs} ms (${seen.join(' ')}): ${r.text}`);
    await sleep(r.status === 503 ? Math.min(Number(r.headers.get('retry-after')), 3) * 1000 : 1000);
  }
}

describe('--auth-leeway 1: a token stops working at its exp, cached or not', () => {
  let d;
  before(async () => {
    d = await deploy({ serverFlags: ['--auth-leeway', '1'] });
  });
  after(async () => {
    if (!d) return;
    const { status, log } = await d.stop();
    assertNoTokenIn(log, '--auth-leeway 1');
    assert.deepEqual(status, { code: 0, signal: null });
  });

  test('accepted (twice: the second from the cache) until exp + 1 s, then 401', TEST, async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = d.signed({ exp: now + 4 });
    for (const id of [1, 2]) {
      const r = await d.modern(id, 'tools/call', { name: 'echo', arguments: { text: 'soon' } }, token);
      assert.equal(r.status, 200, r.text);
    }
    await sleep((now + 4 + 1 + 1.5) * 1000 - Date.now());
    await refusedIn(d, token, 'past exp + leeway', { id: 3 });
    await refusedIn(d, d.signed({ nbf: Math.floor(Date.now() / 1000) + 5 }), 'nbf 5 s ahead (past the 1 s leeway)', { id: 4 });
  });
});

describe('key rotation at the issuer, without restarting mcpactord', () => {
  let d;
  before(async () => {
    d = await deploy();
  });
  after(async () => {
    if (!d) return;
    const { status, log } = await d.stop();
    assertNoTokenIn(log, 'key rotation');
    assert.deepEqual(status, { code: 0, signal: null });
  });

  // README (Authorization, Keys): a token of a key the server has not seen makes it fetch the key
  // set again, and that request waits for the fetch: no restart, no failed request; at most once
  // per 10 s (so a rotation within 10 s of the last fetch is seen only after that: `eventually`).
  const COOLDOWN_MS = 10000;
  test('a token signed with the new key (new kid first, old kept) is accepted at once; then the old key dropped', { timeout: 120000 }, async () => {
    const before = await d.token();
    const r0 = await d.modern(1, 'tools/call', { name: 'echo', arguments: { text: 'k1' } }, before);
    assert.equal(r0.status, 200, r0.text);
    let lastFetch = Date.now(); // the server's key set came at its start (deploy waits for it)

    const fresh = generateKey('ES256', 'rotated-es256');
    const rotated = { keys: [fresh, ...d.keyset.keys] };
    d.iss = await d.iss.restart({ keys: writeKeys(d.scratch.dir, rotated) });
    const after1 = await d.token();
    assert.equal(decodeJwt(after1).header.kid, 'rotated-es256', 'the issuer signs with the new key');
    await sleep(lastFetch + COOLDOWN_MS + 1000 - Date.now());
    const r1 = await d.modern(2, 'tools/call', { name: 'echo', arguments: { text: 'k2' } }, after1);
    assert.equal(r1.status, 200, `the first request with the new key: ${r1.status} ${r1.text}`);
    lastFetch = Date.now();
    const r2 = await d.modern(3, 'tools/call', { name: 'echo', arguments: { text: 'k1 again' } }, d.signed({}));
    assert.equal(r2.status, 200, `a token of the old key, still published: ${r2.text}`);

    // the next rotation drops every old key
    const next = generateKeySet(undefined, 'rotated-again-');
    d.iss = await d.iss.restart({ keys: writeKeys(d.scratch.dir, next) });
    const after2 = await d.token();
    assert.equal(decodeJwt(after2).header.kid, next.keys[0].kid);
    await sleep(lastFetch + COOLDOWN_MS + 1000 - Date.now());
    const r3 = await d.modern(4, 'tools/call', { name: 'echo', arguments: { text: 'k3' } }, after2);
    assert.equal(r3.status, 200, `the first request with the key of the second rotation: ${r3.status} ${r3.text}`);
    // the old keys are gone from the set now: a new token of one is refused (one seen before may
    // stay accepted from the server's cache of verified tokens until its exp; that cache is per
    // HTTP loop, so on a loop that has not seen it the token is verified again, and its key is
    // one the set fetched moments ago lacks: 503 + Retry-After within the cooldown, as for id 5)
    await refusedIn(d, d.signed({}), 'a token of a dropped key', { id: 5, keyFetch: true });
    const cached = await d.modern(6, 'tools/call', { name: 'echo', arguments: { text: 'cached' } }, before);
    assert.ok([200, 401, 503].includes(cached.status), cached.text);
  });

  test('a rotation seen within the refetch cooldown: accepted once the cooldown allows a fetch', { timeout: 120000 }, async () => {
    const fresh = generateKey('ES256', 'rotated-soon');
    d.iss = await d.iss.restart({ keys: writeKeys(d.scratch.dir, { keys: [fresh, ...d.keyset.keys] }) });
    d.keyset = { keys: [fresh, ...d.keyset.keys] };
    await eventually(d, 7, await d.token(), 'a token of a key rotated within the cooldown', COOLDOWN_MS * 3);
  });
});

describe('the issuer down', () => {
  let d;
  before(async () => {
    d = await deploy({ issuerUp: false });
  });
  after(async () => {
    if (!d) return;
    const { status, log } = await d.stop();
    assertNoTokenIn(log, 'issuer down');
    assert.deepEqual(status, { code: 0, signal: null });
  });

  test('no key set yet: 503 + Retry-After (not 401); no token still gets the 401 challenge; then the issuer up: 200', TEST, async () => {
    // signed with the key the issuer will have, for the issuer URL mcpactord was given
    const token = d.signed({});
    const r = await d.modern(1, 'tools/call', { name: 'echo', arguments: { text: 'x' } }, token);
    assert.equal(r.status, 503, `${r.status} ${r.text}`);
    const retryAfter = r.headers.get('retry-after');
    assert.match(retryAfter ?? '', /^\d+$/, 'Retry-After in seconds');
    assertRpcError(r, 1, 'issuer down');
    const none = await d.modern(2, 'tools/list', {}, undefined);
    assertChallenge(none, 401, d.prm, { what: 'no token, issuer down' });
    const s = new SessionClient(d.url, token);
    const init = await s.initialize();
    assert.equal(init.status, 503, `initialize, issuer down: ${init.status} ${init.text}`);

    d.iss = await startIssuer({ port: d.issuerPort, resource: d.resource, keys: d.keysFile });
    let ok;
    const deadline = Date.now() + 30000;
    do {
      ok = await d.modern(3, 'tools/call', { name: 'echo', arguments: { text: 'up' } }, token);
      if (ok.status === 200) break;
      assert.ok([503, 200].includes(ok.status), `while the key set is fetched: ${ok.status} ${ok.text}`);
      await sleep(Math.min(1000, Number(ok.headers.get('retry-after') ?? 1) * 1000));
    } while (Date.now() < deadline);
    assert.equal(ok.status, 200, `after the issuer came up: ${ok.status} ${ok.text}`);
    assert.equal(textOf(ok.answer(3)), 'up');
    const issued = await d.token();
    const r2 = await d.modern(4, 'tools/call', { name: 'echo', arguments: { text: 'issued' } }, issued);
    assert.equal(r2.status, 200, r2.text);

    // down again: the cached key set keeps serving known keys
    await d.iss.stop();
    const cached = await d.modern(5, 'tools/call', { name: 'echo', arguments: { text: 'cached' } }, d.signed({}));
    assert.equal(cached.status, 200, `the cached key set while the issuer is down: ${cached.text}`);
    d.iss = null;
  });
});

function decodeAlg(client) {
  return { 'mcp-es256': 'ES256', 'mcp-rs256': 'RS256', 'mcp-ps256': 'PS256', 'mcp-eddsa': 'EdDSA' }[client];
}

describe('an issuer with RFC 8414 metadata only (no OpenID discovery)', () => {
  let d;
  before(async () => {
    d = await deploy({ issuerOpts: { discovery: 'oauth' }, waitForKeys: false });
  });
  after(async () => {
    if (!d) return;
    const { status, log } = await d.stop();
    assertNoTokenIn(log, 'RFC 8414 only');
    assert.deepEqual(status, { code: 0, signal: null });
  });

  test('its tokens are accepted (the key set found through /.well-known/oauth-authorization-server)', TEST, async () => {
    const openid = await httpRequest(`${d.iss.issuer}/.well-known/openid-configuration`, { method: 'GET' });
    assert.equal(openid.status, 404, 'no OpenID discovery at this issuer');
    let r;
    const deadline = Date.now() + 15000; // a first fetch may still be under way (503)
    do {
      r = await d.modern(1, 'tools/call', { name: 'echo', arguments: { text: '8414' } }, await d.token());
      if (r.status !== 503) break;
      await sleep(500);
    } while (Date.now() < deadline);
    assert.equal(r.status, 200, r.text);
    assert.equal(textOf(r.answer(1)), '8414');
  });
});

describe('an https:// issuer (its certificate trusted through SSL_CERT_FILE)', () => {
  let d;
  let untrusted;
  let scratch;
  before(async () => {
    scratch = scratchDir('mcpd-auth-tls-');
    const tls = selfSignedCert(scratch.dir);
    const other = selfSignedCert(scratch.dir, 'other');
    d = await deploy({ issuerOpts: { tls }, serverEnv: { SSL_CERT_FILE: tls.cert } });
    // another server for the same issuer that trusts another certificate only
    untrusted = await deploy({ issuerOpts: { tls }, serverEnv: { SSL_CERT_FILE: other.cert }, waitForKeys: false });
  });
  after(async () => {
    for (const x of [d, untrusted]) {
      if (!x) continue;
      const { status, log } = await x.stop();
      assertNoTokenIn(log, 'https issuer');
      assert.deepEqual(status, { code: 0, signal: null });
    }
    scratch?.remove();
  });

  test('its tokens are accepted; the PRM names the https issuer', TEST, async () => {
    assert.match(d.iss.issuer, /^https:\/\/127\.0\.0\.1:\d+$/);
    const prm = (await httpRequest(d.prm, { method: 'GET' })).json;
    assert.deepEqual(prm.authorization_servers, [d.iss.issuer]);
    const r = await d.modern(1, 'tools/call', { name: 'echo', arguments: { text: 'tls' } }, d.signed({}));
    assert.equal(r.status, 200, r.text);
    assert.equal(textOf(r.answer(1)), 'tls');
  });

  test('an issuer whose certificate the server does not trust: 503 + Retry-After, never 200', TEST, async () => {
    const r = await untrusted.modern(2, 'tools/call', { name: 'echo', arguments: { text: 'x' } }, untrusted.signed({}));
    assert.equal(r.status, 503, `${r.status} ${r.text}`);
    assert.match(r.headers.get('retry-after') ?? '', /^\d+$/);
    assertRpcError(r, 2, 'untrusted issuer certificate');
  });
});

describe('--cors-origin with an issuer: what a browser client needs', () => {
  const ORIGIN = 'http://app.example.test:3000';
  let d;
  before(async () => {
    d = await deploy({ serverFlags: ['--cors-origin', ORIGIN] });
  });
  after(async () => {
    if (!d) return;
    const { status, log } = await d.stop();
    assertNoTokenIn(log, 'CORS');
    assert.deepEqual(status, { code: 0, signal: null });
  });

  const exposed = (r) => (r.headers.get('access-control-expose-headers') ?? '').toLowerCase().split(/\s*,\s*/);

  test('a preflight needs no token; 401s carry Allow-Origin and expose WWW-Authenticate; a call works', TEST, async () => {
    const pre = await httpRequest(d.url, {
      method: 'OPTIONS',
      headers: {
        origin: ORIGIN, 'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, mcp-protocol-version',
      },
    });
    assert.ok(pre.status >= 200 && pre.status < 300, `preflight: ${pre.status} ${pre.text}`);
    assert.equal(pre.headers.get('access-control-allow-origin'), ORIGIN);
    assert.match((pre.headers.get('access-control-allow-headers') ?? '').toLowerCase(), /authorization/);

    const { body, headers } = modernRequest(1, 'tools/list', {}, {});
    const r = await httpRequest(d.url, { headers: { ...headers, origin: ORIGIN }, body });
    assertChallenge(r, 401, d.prm, { what: 'CORS 401' });
    assert.equal(r.headers.get('access-control-allow-origin'), ORIGIN);
    assert.ok(exposed(r).includes('www-authenticate'), `exposes WWW-Authenticate: ${r.headers.get('access-control-expose-headers')}`);

    const bad = modernRequest(2, 'tools/list', {}, { token: d.signed({ aud: 'http://127.0.0.1:1/mcp' }) });
    const r2 = await httpRequest(d.url, { headers: { ...bad.headers, origin: ORIGIN }, body: bad.body });
    assertChallenge(r2, 401, d.prm, { error: 'invalid_token', what: 'CORS invalid_token', scope: null });
    assert.equal(r2.headers.get('access-control-allow-origin'), ORIGIN);

    const ok = modernRequest(3, 'tools/call', { name: 'echo', arguments: { text: 'cors' } }, { token: d.signed({}) });
    const r3 = await httpRequest(d.url, { headers: { ...ok.headers, origin: ORIGIN }, body: ok.body });
    assert.equal(r3.status, 200, r3.text);
    assert.equal(r3.headers.get('access-control-allow-origin'), ORIGIN);
  });

  test('the Protected Resource Metadata is readable from the page (CORS on the well-known paths)', TEST, async () => {
    for (const url of [d.prm, `http://127.0.0.1:${d.port}/.well-known/oauth-protected-resource`]) {
      const r = await httpRequest(url, { method: 'GET', headers: { origin: ORIGIN } });
      assert.equal(r.status, 200, `${url}: ${r.text}`);
      assert.ok([ORIGIN, '*'].includes(r.headers.get('access-control-allow-origin')),
        `${url}: Access-Control-Allow-Origin ${r.headers.get('access-control-allow-origin')}`);
    }
  });
});
