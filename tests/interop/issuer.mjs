#!/usr/bin/env node
// A real OAuth 2.1 / OpenID authorization server for the auth tests: panva's oidc-provider (pinned
// in package.json), configured for machine clients. Not a mock: tokens, key sets, metadata,
// introspection and revocation are oidc-provider's own.
//
// Usage (also `node issuer.mjs --help`):
//   node issuer.mjs --port P --resource URL [--resource URL2 ...] [--keys FILE] [--ttl SECS]
//                   [--alg ALG] [--scopes "S1 S2"] [--clients FILE] [--discovery openid|oauth|both]
//                   [--host H] [--tls-cert FILE --tls-key FILE]
//
//   --port P          listen on 127.0.0.1:P (0: the kernel picks one); the issuer is http://H:P
//   --resource URL    a protected resource (repeatable): a client_credentials token requested with
//                     resource=URL is a JWT access token (RFC 9068, typ at+jwt) with aud=URL, the
//                     granted scopes among --scopes, signed with --alg. Any other absolute URL is
//                     served the same way (its own aud), so a test can get a token for another
//                     resource; a token requested without resource is opaque (no aud).
//   --keys FILE       the signing keys: a JWKS of private JWKs ({"keys":[...]}), each with kid,
//                     alg and use "sig". For each alg the first key of that alg signs, and every
//                     key is published at jwks_uri, so a rotation is: restart on the same port
//                     with the new key first (old key kept: old tokens still verify; dropped:
//                     they do not). Default: fresh ES256, RS256 (also PS256) and EdDSA keys.
//   --ttl SECS        access token lifetime (default 300)
//   --alg ALG         JWT signing alg: ES256 (default), RS256, PS256, EdDSA; a client's
//                     x_token_alg overrides it (see the default clients below)
//   --scopes "..."    the scopes of the resources (default "mcp:tools mcp:read mcp:admin")
//   --clients FILE    a JSON array of client metadata replacing the default clients
//   --discovery ...   where the metadata is served: openid (/.well-known/openid-configuration,
//                     oidc-provider's own; the default), oauth (only RFC 8414's
//                     /.well-known/oauth-authorization-server) or both
//   --tls-cert FILE, --tls-key FILE
//                     serve https (PEM certificate and key): the issuer is https://H:P
//
// The default clients (all client_credentials, client_secret_basic, secret = id + "-secret"):
//   mcp-client        scope "mcp:tools mcp:read"
//   mcp-admin         scope "mcp:tools mcp:read mcp:admin"
//   mcp-other         scope "mcp:tools mcp:read mcp:admin" (a second principal)
//   mcp-opaque        x_token_format "opaque": its tokens are opaque even with a resource (aud set,
//                     checked by introspection)
//   mcp-rs256, mcp-ps256, mcp-eddsa, mcp-es256: x_token_alg RS256 / PS256 / EdDSA / ES256
//   mcp-introspector  the resource server's own credentials for introspection (RFC 7662)
// Client metadata may carry x_token_format ("jwt" | "opaque") and x_token_alg.
//
// Features on: client_credentials, resourceIndicators (RFC 8707), introspection (RFC 7662),
// revocation (RFC 7009), DPoP (RFC 9449: a token request with a DPoP proof gets a token bound
// with cnf.jkt). Endpoints (oidc-provider's defaults): /token, /token/introspection,
// /token/revocation, /jwks.
//
// When ready it prints one JSON line on stdout: {"issuer", "port", "jwks_uri", "token_endpoint",
// "introspection_endpoint", "revocation_endpoint", "clients": [{client_id, client_secret, scope}],
// "kids": [...]}. Everything else (oidc-provider's notices, one line per request) goes to stderr.
// It serves until SIGTERM/SIGINT, or until its stdin closes when stdin is a pipe (so it dies
// with the test that started it).
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

import { newJwk } from './oauth.mjs';

// oidc-provider writes its notices with console.info: stdout is for the ready line only.
console.info = console.error;
console.log = console.error;

const { values: opt } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    resource: { type: 'string', multiple: true, default: [] },
    keys: { type: 'string' },
    ttl: { type: 'string', default: '300' },
    alg: { type: 'string', default: 'ES256' },
    scopes: { type: 'string', default: 'mcp:tools mcp:read mcp:admin' },
    clients: { type: 'string' },
    discovery: { type: 'string', default: 'openid' },
    help: { type: 'boolean', default: false },
    'tls-cert': { type: 'string' },
    'tls-key': { type: 'string' },
  },
});
if (opt.help) {
  // the comment at the top of this file
  const lines = fs.readFileSync(new URL(import.meta.url), 'utf8').split('\n').slice(1);
  process.stdout.write(`${lines.slice(0, lines.findIndex((l) => !l.startsWith('//'))).map((l) => l.slice(3)).join('\n')}\n`);
  process.exit(0);
}

const ALGS = new Set(['ES256', 'RS256', 'PS256', 'EdDSA']);
const fail = (msg) => {
  console.error(`issuer.mjs: ${msg}`);
  process.exit(2);
};
if (!ALGS.has(opt.alg)) fail(`--alg ${opt.alg}: one of ${[...ALGS].join(', ')}`);
if (!['openid', 'oauth', 'both'].includes(opt.discovery)) fail('--discovery openid|oauth|both');
const ttl = Number(opt.ttl);
if (!(ttl > 0)) fail('--ttl SECS: a positive number');
const scopes = opt.scopes.split(' ').filter(Boolean);

// A fresh key set: one key per family (RSA serves RS256 and PS256).
function generateKeys() {
  // (newJwk: why the key is not exported from what generateKeyPairSync returns)
  const jwk = (type, options, alg) => ({ ...newJwk(type, options), kid: `${alg.toLowerCase()}-${crypto.randomBytes(4).toString('hex')}`, alg, use: 'sig' });
  const rsa = jwk('rsa', { modulusLength: 2048 }, 'RS256');
  return {
    keys: [
      jwk('ec', { namedCurve: 'P-256' }, 'ES256'),
      rsa,
      { ...rsa, kid: rsa.kid.replace('rs256', 'ps256'), alg: 'PS256' },
      jwk('ed25519', {}, 'EdDSA'),
    ],
  };
}
const jwks = opt.keys ? JSON.parse(fs.readFileSync(opt.keys, 'utf8')) : generateKeys();

const defaultClients = [
  ['mcp-client', 'mcp:tools mcp:read'],
  ['mcp-admin', 'mcp:tools mcp:read mcp:admin'],
  ['mcp-other', 'mcp:tools mcp:read mcp:admin'],
  ['mcp-opaque', 'mcp:tools mcp:read mcp:admin', { x_token_format: 'opaque' }],
  ['mcp-rs256', 'mcp:tools mcp:read mcp:admin', { x_token_alg: 'RS256' }],
  ['mcp-ps256', 'mcp:tools mcp:read mcp:admin', { x_token_alg: 'PS256' }],
  ['mcp-eddsa', 'mcp:tools mcp:read mcp:admin', { x_token_alg: 'EdDSA' }],
  ['mcp-es256', 'mcp:tools mcp:read mcp:admin', { x_token_alg: 'ES256' }],
  ['mcp-introspector', ''],
].map(([id, scope, extra]) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
  token_endpoint_auth_method: 'client_secret_basic',
  ...(scope && { scope }),
  ...extra,
}));
const clients = opt.clients ? JSON.parse(fs.readFileSync(opt.clients, 'utf8')) : defaultClients;

if (!opt['tls-cert'] !== !opt['tls-key']) fail('--tls-cert and --tls-key go together');
const tls = Boolean(opt['tls-cert']);

// Listen first: the issuer URL needs the port.
const server = tls
  ? https.createServer({ cert: fs.readFileSync(opt['tls-cert']), key: fs.readFileSync(opt['tls-key']) })
  : http.createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(Number(opt.port), opt.host, resolve);
});
const { port } = server.address();
const issuer = `${tls ? 'https' : 'http'}://${opt.host}:${port}`;

const resources = new Set(opt.resource);
const provider = new Provider(issuer, {
  clients,
  jwks,
  scopes: ['openid', 'offline_access', ...scopes],
  extraClientMetadata: { properties: ['x_token_format', 'x_token_alg'] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: {
      enabled: true,
      // only confidential clients introspect (the resource server's credentials)
      allowedPolicy: async (ctx, client) => client.clientAuthMethod !== 'none',
    },
    revocation: { enabled: true },
    dPoP: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => undefined,
      useGrantedResource: async () => false,
      getResourceServerInfo: async (ctx, resource, client) => {
        const alg = client.x_token_alg ?? opt.alg;
        const info = { scope: scopes.join(' '), accessTokenTTL: ttl };
        if (client.x_token_format === 'opaque') return { ...info, accessTokenFormat: 'opaque' };
        if (!resources.has(resource)) console.error(`issuer: a token for the unlisted resource ${resource}`);
        return { ...info, audience: resource, accessTokenFormat: 'jwt', jwt: { sign: { alg } } };
      },
    },
  },
  enabledJWA: {
    idTokenSigningAlgValues: ['ES256', 'RS256', 'PS256', 'EdDSA'],
    dPoPSigningAlgValues: ['ES256', 'RS256', 'PS256', 'EdDSA'],
  },
  ttl: { ClientCredentials: ttl, AccessToken: ttl },
  cookies: { keys: [crypto.randomBytes(16).toString('hex')] },
  renderError: async (ctx, out) => {
    ctx.type = 'json';
    ctx.body = out;
  },
});

// Discovery: oidc-provider serves /.well-known/openid-configuration; RFC 8414's path is the
// same document (for an issuer without a path both names sit at the root).
provider.use(async (ctx, next) => {
  const oauthPath = '/.well-known/oauth-authorization-server';
  const openidPath = '/.well-known/openid-configuration';
  if (ctx.path === openidPath && opt.discovery === 'oauth') {
    ctx.status = 404;
    return;
  }
  if (ctx.path === oauthPath) {
    if (opt.discovery === 'openid') {
      ctx.status = 404;
      return;
    }
    ctx.path = openidPath;
  }
  await next();
});
// One line per request on stderr, for the test's diagnostics (never the credentials).
provider.use(async (ctx, next) => {
  await next();
  console.error(`issuer: ${ctx.method} ${ctx.path} ${ctx.status}`);
});

server.on('request', provider.callback());

const stop = () => {
  server.closeAllConnections?.();
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
if (!process.stdin.isTTY) {
  process.stdin.on('end', stop);
  process.stdin.on('error', stop);
  process.stdin.resume();
}

process.stdout.write(`${JSON.stringify({
  issuer,
  port,
  jwks_uri: `${issuer}/jwks`,
  token_endpoint: `${issuer}/token`,
  introspection_endpoint: `${issuer}/token/introspection`,
  revocation_endpoint: `${issuer}/token/revocation`,
  clients: clients.map(({ client_id, client_secret, scope }) => ({ client_id, client_secret, scope })),
  kids: jwks.keys.map((k) => k.kid),
})}\n`);
