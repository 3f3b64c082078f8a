// DPoP (RFC 9449) at mcpactord (issue 22, the step after the bearer tokens): a token that
// issuer.mjs (oidc-provider) bound to a key (cnf.jkt, requested with a DPoP proof at its token
// endpoint) is accepted only as `Authorization: DPoP <token>` with a valid `DPoP` proof of that
// key for this method and URL (htm, htu, ath, iat); each proof's jti is refused a second time,
// after a restart of the server too (the replay cache is durable). Run by
// `meson test --suite interop` (node's built-in test runner); every wait is bounded.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { after, before } from './hooks.mjs';

import {
  assertNoTokenIn, assertRpcError, clientCredentials, decodeJwt, deploy, dpopProof, generateKey, httpRequest,
  jwkThumbprint, modernRequest, textOf, use,
} from './oauth.mjs';

const TEST = { timeout: 60000 };

let d;
before(async () => {
  d = await deploy();
});
after(async () => {
  if (!d) return;
  const { status, log } = await d.stop();
  assertNoTokenIn(log, 'DPoP');
  assert.deepEqual(status, { code: 0, signal: null }, 'the server exits 0 on SIGTERM');
});

// A DPoP-bound token of the issuer for this server, bound to key.
async function boundToken(key, client = 'mcp-client') {
  const t = await clientCredentials(d.iss, client, {
    scope: 'mcp:tools', resource: d.resource, dpop: dpopProof(key, { htu: d.iss.token_endpoint }),
  });
  assert.equal(t.token_type, 'DPoP');
  assert.equal(decodeJwt(t.access_token).payload.cnf?.jkt, jwkThumbprint(key));
  return use(t.access_token);
}

// tools/call echo with `Authorization: <scheme> <token>` and, when given, a DPoP header.
async function call(id, token, proof, { scheme = 'DPoP', text = 'dpop' } = {}) {
  const { body, headers } = modernRequest(id, 'tools/call', { name: 'echo', arguments: { text } }, {});
  headers.authorization = `${scheme} ${token}`;
  if (proof !== undefined) headers.dpop = use(proof);
  return httpRequest(d.url, { headers, body });
}

function assertRefused(r, id, what) {
  assert.equal(r.status, 401, `${what}: ${r.status} ${r.text}`);
  assert.ok(r.headers.get('www-authenticate'), `${what}: a challenge`);
  assertRpcError(r, id, what);
}

describe('DPoP-bound tokens', () => {
  for (const alg of ['ES256', 'EdDSA', 'RS256']) {
    test(`a valid proof (${alg} key) for POST ${'<resource>'}: accepted`, TEST, async () => {
      const key = generateKey(alg);
      const token = await boundToken(key);
      const r = await call(1, token, dpopProof(key, { htu: d.resource, token }));
      assert.equal(r.status, 200, r.text);
      assert.equal(textOf(r.answer(1)), 'dpop');
    });
  }

  test('without a proof, or as a Bearer token: 401', TEST, async () => {
    const key = generateKey('ES256');
    const token = await boundToken(key);
    assertRefused(await call(10, token, undefined), 10, 'DPoP scheme, no proof');
    assertRefused(await call(11, token, undefined, { scheme: 'Bearer' }), 11, 'a bound token as Bearer');
    assertRefused(await call(12, token, dpopProof(key, { htu: d.resource, token }), { scheme: 'Bearer' }), 12,
      'a bound token as Bearer, with a proof');
  });

  test('a proof for another method, URL, token, key, or too old: 401', TEST, async () => {
    const key = generateKey('ES256');
    const token = await boundToken(key);
    const now = Math.floor(Date.now() / 1000);
    const cases = [
      ['htm GET', dpopProof(key, { htm: 'GET', htu: d.resource, token })],
      ['htu another path', dpopProof(key, { htu: `http://127.0.0.1:${d.port}/other`, token })],
      ['htu another host', dpopProof(key, { htu: 'http://127.0.0.1:1/mcp', token })],
      ['ath of another token', dpopProof(key, { htu: d.resource, token: `${token}x` })],
      ['no ath', dpopProof(key, { htu: d.resource })],
      ['another key', dpopProof(generateKey('ES256'), { htu: d.resource, token })],
      ['iat 10 minutes ago', dpopProof(key, { htu: d.resource, token, claims: { iat: now - 600 } })],
      ['iat in 10 minutes', dpopProof(key, { htu: d.resource, token, claims: { iat: now + 600 } })],
      ['no jti', dpopProof(key, { htu: d.resource, token, claims: { jti: undefined } })],
      ['typ JWT', dpopProof(key, { htu: d.resource, token, header: { typ: 'JWT' } })],
      ['alg none', dpopProof(key, { htu: d.resource, token, header: { alg: 'none' } })],
      ['garbage', 'garbage'],
    ];
    let id = 20;
    for (const [what, proof] of cases) assertRefused(await call(id, token, proof), id++, what);
    // the token is still good with a good proof
    const ok = await call(id, token, dpopProof(key, { htu: d.resource, token }));
    assert.equal(ok.status, 200, ok.text);
  });

  test("a proof's jti is refused a second time, and after a restart of the server", TEST, async () => {
    const key = generateKey('ES256');
    const token = await boundToken(key);
    const proof = dpopProof(key, { htu: d.resource, token });
    const first = await call(40, token, proof);
    assert.equal(first.status, 200, first.text);
    assertRefused(await call(41, token, proof), 41, 'the same proof again');

    const spare = dpopProof(key, { htu: d.resource, token });
    const once = await call(42, token, spare);
    assert.equal(once.status, 200, once.text);
    d.server = await d.server.restart();
    await d.keysReady();
    assertRefused(await call(43, token, spare), 43, 'a proof used before the restart');
    assertRefused(await call(44, token, proof), 44, 'the first proof, after the restart');
    const fresh = await call(45, token, dpopProof(key, { htu: d.resource, token }));
    assert.equal(fresh.status, 200, `a new proof after the restart: ${fresh.text}`);
  });
});
