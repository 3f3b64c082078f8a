// The official TypeScript SDK v2 client (@modelcontextprotocol/client: Client +
// StreamableHTTPClientTransport) against the real mcpactord started with --modern, in the
// 2026-07-28 era (pinned, and auto-negotiated) and in the session era (auto mode against a
// server started with --no-modern, and the client's default). Every exchange goes through a recording
// fetch, so an assertion that fails prints the requests and responses it was about. Run by
// `meson test --suite interop` (node's built-in test runner); every wait is bounded.
//
// How the SDK is driven (@modelcontextprotocol/client 2.4.0):
// - era: `new Client(info, { versionNegotiation: { mode } })` with mode `{ pin: '2026-07-28' }`
//   (connect sends server/discover, which must offer that version: no fallback), `'auto'`
//   (server/discover first; anything but definitive modern evidence falls back to initialize)
//   or `'legacy'`, the default (plain initialize). `client.getProtocolEra()` says which one it
//   picked ('modern' | 'legacy'), `client.getNegotiatedProtocolVersion()` the version.
// - input requests: an `input_required` result is answered by the handler registered with
//   `client.setRequestHandler('elicitation/create', ...)`, and the client retries the call with
//   `inputResponses` and the `requestState` itself (ClientOptions.inputRequired.autoFulfill,
//   on by default), so callTool returns the final result.
// - Mcp-Param-* headers: callTool mirrors the x-mcp-header arguments of the tool's inputSchema as
//   it knows it from the cached tools/list (or options.toolDefinition); without it the call goes
//   out without them, and on the server's -32020 the client refetches tools/list and retries.
// - per-request log level: `_meta: { [LOG_LEVEL_META_KEY]: level }` in the call's params (the
//   envelope the client adds keeps user keys); progress: callTool's `onprogress` option.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { after, before } from './hooks.mjs';

import {
  Client,
  LOG_LEVEL_META_KEY,
  SdkError,
  SdkErrorCode,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';

import { startServer } from './server.mjs';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const DEMO_TOOLS = ['echo', 'add', 'slow', 'counter', 'new_counter', 'elicit_name', 'notify'];
const REQUEST = { timeout: 20000 }; // every request of the SDK is bounded by this
const TEST = { timeout: 60000 }; // and every test by this

let server; // the --modern server (restarted in place by the handle test)

before(async () => {
  server = await startServer(['--modern']);
});

after(async () => {
  const status = await server.stop();
  assert.deepEqual(status, { code: 0, signal: null }, `the server exits 0 on SIGTERM\n${server.tail()}`);
});

// A fetch for the transport that records each exchange: method, request headers and body,
// status, content type and (but for GET streams, which stay open) the response body.
class Wire {
  constructor() {
    this.entries = [];
    this.pending = new Set();
    this.fetch = async (url, init = {}) => {
      const entry = {
        method: init.method ?? 'GET',
        headers: Object.fromEntries(new Headers(init.headers).entries()),
        body: typeof init.body === 'string' ? init.body : undefined,
      };
      this.entries.push(entry);
      const response = await fetch(url, init);
      entry.status = response.status;
      entry.contentType = response.headers.get('content-type');
      if (entry.method !== 'GET') {
        const reading = response.clone().text().then(
          (text) => { entry.response = text; },
          (error) => { entry.response = `<unread: ${error.message}>`; });
        this.pending.add(reading);
        reading.finally(() => this.pending.delete(reading));
      }
      return response;
    };
  }

  // Waits (at most timeoutMs) for the response bodies still being read.
  async settled(timeoutMs = 5000) {
    let timer;
    await Promise.race([Promise.all([...this.pending]),
      new Promise((resolve) => { timer = setTimeout(resolve, timeoutMs); })]);
    clearTimeout(timer);
  }

  // POSTs of one JSON-RPC method, with the parsed request body.
  posts(method) {
    return this.entries.filter((e) => e.method === 'POST').map((e) => ({ ...e, json: parse(e.body) }))
      .filter((e) => e.json?.method === method);
  }

  // The exchanges since `from` as text, for assertion messages.
  dump(from = 0) {
    return this.entries.slice(from).map((e) => {
      const head = Object.entries(e.headers).filter(([k]) => k.startsWith('mcp-')).map(([k, v]) => `${k}: ${v}`);
      return `> ${e.method} ${head.join('; ')}\n> ${e.body ?? ''}\n< ${e.status} ${e.contentType ?? ''}\n< ${
        (e.response ?? '').slice(0, 1500)}`;
    }).join('\n');
  }
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// JSON-RPC messages of an SSE or JSON response body.
function messagesOf(entry) {
  if (!entry?.response) return [];
  if ((entry.contentType ?? '').includes('text/event-stream')) {
    return entry.response.split('\n').filter((l) => l.startsWith('data:')).map((l) => parse(l.slice(5).trim()))
      .filter(Boolean);
  }
  const json = parse(entry.response);
  return json === undefined ? [] : [json].flat();
}

// A connected v2 client. mode: a versionNegotiation mode, or undefined for the client's default.
async function connect({ mode, url = server.url, elicit } = {}) {
  const wire = new Wire();
  const client = new Client({ name: 'mcpactord-interop-v2', version: '1.0.0' }, {
    capabilities: { elicitation: {} },
    ...(mode !== undefined && { versionNegotiation: { mode } }),
  });
  const elicitations = [];
  client.setRequestHandler('elicitation/create', async (request) => {
    elicitations.push(request.params);
    return elicit ? elicit(request.params) : { action: 'accept', content: { name: 'Ada' } };
  });
  const logs = [];
  client.setNotificationHandler('notifications/message', (notification) => logs.push(notification.params));
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: wire.fetch });
  await client.connect(transport, REQUEST);
  return { client, transport, wire, logs, elicitations };
}

const textOf = (result) => result.content?.find((c) => c.type === 'text')?.text;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The exchange of the last tools/call of `name` (after settled()).
async function lastCall(wire, name) {
  await wire.settled();
  return wire.posts('tools/call').filter((e) => e.json.params?.name === name).at(-1);
}

describe('SDK v2 pinned to 2026-07-28 (versionNegotiation.mode = { pin })', () => {
  const pin = { pin: MODERN };

  test('connect: server/discover, no initialize, no session', TEST, async () => {
    const { client, wire } = await connect({ mode: pin });
    try {
      await wire.settled();
      assert.equal(client.getProtocolEra(), 'modern', wire.dump());
      assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
      const discover = client.getDiscoverResult();
      assert.ok(discover?.supportedVersions.includes(MODERN), JSON.stringify(discover));
      assert.equal(client.getServerVersion()?.name, 'mcpactord');
      assert.equal(wire.entries[0].headers['mcp-method'], 'server/discover', wire.dump());
      assert.equal(wire.entries[0].headers['mcp-protocol-version'], MODERN);
      assert.equal(wire.posts('initialize').length, 0, `no initialize:\n${wire.dump()}`);
      assert.ok(wire.entries.every((e) => !('mcp-session-id' in e.headers)), wire.dump());
    } finally {
      await client.close();
    }
  });

  test('tools/list lists the demo tools, counter.handle marked x-mcp-header Handle', TEST, async () => {
    const { client, wire } = await connect({ mode: pin });
    try {
      const { tools } = await client.listTools(undefined, REQUEST);
      assert.deepEqual(tools.map((t) => t.name).sort(), [...DEMO_TOOLS].sort(), wire.dump());
      const counter = tools.find((t) => t.name === 'counter');
      assert.equal(counter.inputSchema.properties.handle['x-mcp-header'], 'Handle');
      await wire.settled();
      const [list] = wire.posts('tools/list');
      assert.equal(list.headers['mcp-protocol-version'], MODERN, wire.dump());
      assert.equal(list.json.params._meta['io.modelcontextprotocol/protocolVersion'], MODERN);
    } finally {
      await client.close();
    }
  });

  test('tools/call echo and add', TEST, async () => {
    const { client, wire } = await connect({ mode: pin });
    try {
      const echo = await client.callTool({ name: 'echo', arguments: { text: 'hi' } }, REQUEST);
      assert.equal(textOf(echo), 'hi', wire.dump());
      assert.equal(echo._meta?.['io.modelcontextprotocol/serverInfo']?.name, 'mcpactord', 'serverInfo in _meta');
      const call = await lastCall(wire, 'echo');
      assert.equal(call.headers['mcp-method'], 'tools/call', wire.dump());
      assert.equal(call.headers['mcp-name'], 'echo');
      assert.equal(messagesOf(call)[0]?.result?.resultType, 'complete', wire.dump());

      const add = await client.callTool({ name: 'add', arguments: { a: 2, b: 3.5 } }, REQUEST);
      assert.equal(textOf(add), '5.5', wire.dump());
    } finally {
      await client.close();
    }
  });

  test('slow: progress notifications on the call stream, then the result', TEST, async () => {
    const { client, wire } = await connect({ mode: pin });
    try {
      const progress = [];
      const result = await client.callTool({ name: 'slow', arguments: { seconds: 1, steps: 3 } },
        { ...REQUEST, onprogress: (p) => progress.push(p) });
      assert.equal(textOf(result), 'done after 3 steps', wire.dump());
      assert.deepEqual(progress.map((p) => [p.progress, p.total]), [[1, 3], [2, 3], [3, 3]], wire.dump());
      const call = await lastCall(wire, 'slow');
      assert.ok('progressToken' in call.json.params._meta, 'the call carries a progressToken');
      assert.match(call.contentType, /text\/event-stream/, wire.dump());
    } finally {
      await client.close();
    }
  });

  test('notify: log messages only when _meta sets a log level, filtered by it', TEST, async () => {
    const { client, wire, logs } = await connect({ mode: pin });
    try {
      const withLevel = await client.callTool(
        { name: 'notify', arguments: { count: 3 }, _meta: { [LOG_LEVEL_META_KEY]: 'debug' } }, REQUEST);
      assert.equal(textOf(withLevel), 'sent 3', wire.dump());
      assert.equal(logs.length, 3, `three log messages with logLevel debug:\n${wire.dump()}`);
      assert.deepEqual(logs.map((l) => l.data?.n), [1, 2, 3]);
      assert.ok(logs.every((l) => l.level === 'info' && l.logger === 'notify'), JSON.stringify(logs));

      logs.length = 0;
      const from = wire.entries.length;
      await client.callTool({ name: 'notify', arguments: { count: 3 } }, REQUEST);
      await sleep(300); // a message sent late would arrive here
      await wire.settled();
      assert.equal(logs.length, 0, `no log message without logLevel:\n${wire.dump(from)}`);
      assert.ok(!messagesOf(wire.entries.at(-1)).some((m) => m.method === 'notifications/message'), wire.dump(from));

      // the messages are at info: a request that asks for warning and above gets none
      await client.callTool(
        { name: 'notify', arguments: { count: 2 }, _meta: { [LOG_LEVEL_META_KEY]: 'warning' } }, REQUEST);
      await sleep(300);
      assert.equal(logs.length, 0, `no info message with logLevel warning:\n${wire.dump(from)}`);
    } finally {
      await client.close();
    }
  });

  test('elicit_name: input_required answered by the elicitation handler, the client retries', TEST, async () => {
    const { client, wire, elicitations } = await connect({ mode: pin });
    try {
      const result = await client.callTool({ name: 'elicit_name', arguments: {} }, REQUEST);
      assert.equal(textOf(result), 'Hello, Ada!', wire.dump());
      assert.equal(elicitations.length, 1, 'the handler was asked once');
      assert.equal(elicitations[0].requestedSchema?.properties?.name?.type, 'string', JSON.stringify(elicitations));

      await wire.settled();
      const calls = wire.posts('tools/call').filter((e) => e.json.params.name === 'elicit_name');
      assert.equal(calls.length, 2, `one call and one retry:\n${wire.dump()}`);
      const first = messagesOf(calls[0])[0]?.result;
      assert.equal(first?.resultType, 'input_required', wire.dump());
      const [key] = Object.keys(first.inputRequests);
      assert.equal(first.inputRequests[key].method, 'elicitation/create');
      const retry = calls[1].json.params;
      assert.equal(retry.requestState, first.requestState, 'the requestState is echoed unchanged');
      assert.deepEqual(retry.inputResponses, { [key]: { action: 'accept', content: { name: 'Ada' } } });
      assert.notEqual(calls[1].json.id, calls[0].json.id, 'the retry is a new request');
    } finally {
      await client.close();
    }
  });

  test('elicit_name declined', TEST, async () => {
    const { client, wire } = await connect({ mode: pin, elicit: () => ({ action: 'decline' }) });
    try {
      const result = await client.callTool({ name: 'elicit_name', arguments: {} }, REQUEST);
      assert.equal(textOf(result), 'declined', wire.dump());
    } finally {
      await client.close();
    }
  });

  test('elicit_name: the retry reaches a restarted server (requestState survives the restart)', TEST, async () => {
    // the handler restarts the server (same data directory and port) before it answers
    const { client, wire } = await connect({
      mode: pin,
      elicit: async () => {
        server = await server.restart();
        return { action: 'accept', content: { name: 'Grace' } };
      },
    });
    try {
      const result = await client.callTool({ name: 'elicit_name', arguments: {} }, REQUEST);
      assert.equal(textOf(result), 'Hello, Grace!', `${wire.dump()}\n--- server log:\n${server.tail()}`);
    } finally {
      await client.close();
    }
  });

  test('state handle: new_counter, counter 1 and 2 (Mcp-Param-Handle), restart, counter 3', TEST, async () => {
    const { client, wire } = await connect({ mode: pin });
    let handle;
    try {
      await client.listTools(undefined, REQUEST); // the x-mcp-header declarations the client mirrors
      const made = await client.callTool({ name: 'new_counter', arguments: {} }, REQUEST);
      handle = made.structuredContent?.handle;
      assert.match(handle ?? '', /^[0-9a-f]{32}$/, `a handle in structuredContent:\n${wire.dump()}`);

      for (const want of ['1', '2']) {
        const r = await client.callTool({ name: 'counter', arguments: { handle } }, REQUEST);
        assert.equal(textOf(r), want, wire.dump());
        const call = await lastCall(wire, 'counter');
        assert.equal(call.headers['mcp-param-handle'], handle, `Mcp-Param-Handle mirrors the argument:\n${wire.dump()}`);
      }

      server = await server.restart();

      // the same client (stateless HTTP: same URL, same port) after the restart
      const r = await client.callTool({ name: 'counter', arguments: { handle } }, REQUEST);
      assert.equal(textOf(r), '3', `the handle's state survives the restart:\n${wire.dump()}\n--- server log:\n${
        server.tail()}`);
    } finally {
      await client.close();
    }

    // A new client that has not listed the tools sends the call without Mcp-Param-Handle: the
    // server refuses it (400, -32020) and the client lists the tools and retries with the header.
    const fresh = await connect({ mode: pin });
    try {
      const r = await fresh.client.callTool({ name: 'counter', arguments: { handle } }, REQUEST);
      assert.equal(textOf(r), '4', fresh.wire.dump());
      await fresh.wire.settled();
      const calls = fresh.wire.posts('tools/call');
      const last = calls.at(-1);
      assert.equal(last.headers['mcp-param-handle'], handle, fresh.wire.dump());
      if (calls.length > 1) {
        assert.equal(calls[0].status, 400, fresh.wire.dump());
        assert.equal(messagesOf(calls[0])[0]?.error?.code, -32020, fresh.wire.dump());
      }
    } finally {
      await fresh.client.close();
    }
  });
});

describe('SDK v2 in auto mode (versionNegotiation.mode = "auto")', () => {
  test('against --modern: picks 2026-07-28, listTools and echo work', TEST, async () => {
    const { client, wire } = await connect({ mode: 'auto' });
    try {
      assert.equal(client.getProtocolEra(), 'modern', wire.dump());
      assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
      const { tools } = await client.listTools(undefined, REQUEST);
      assert.ok(DEMO_TOOLS.every((n) => tools.some((t) => t.name === n)), wire.dump());
      assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'auto' } }, REQUEST)), 'auto');
      await wire.settled();
      assert.equal(wire.posts('initialize').length, 0, `no initialize:\n${wire.dump()}`);
    } finally {
      await client.close();
    }
  });

  describe('against a server started with --no-modern', () => {
    let legacy;
    before(async () => {
      legacy = await startServer(['--no-modern']);
    });
    after(async () => {
      const status = await legacy.stop();
      assert.deepEqual(status, { code: 0, signal: null }, `the server exits 0 on SIGTERM\n${legacy.tail()}`);
    });

    test('auto falls back to initialize (2025-11-25): listTools and echo work', TEST, async () => {
      const { client, wire, transport } = await connect({ mode: 'auto', url: legacy.url });
      try {
        await wire.settled();
        assert.equal(client.getProtocolEra(), 'legacy', wire.dump());
        assert.equal(client.getNegotiatedProtocolVersion(), LEGACY);
        assert.equal(wire.posts('server/discover')[0]?.status, 400, `the probe is refused:\n${wire.dump()}`);
        assert.equal(wire.posts('initialize').length, 1, wire.dump());
        assert.match(transport.sessionId ?? '', /^[0-9a-f]{32}$/);
        const { tools } = await client.listTools(undefined, REQUEST);
        assert.ok(tools.some((t) => t.name === 'echo'), wire.dump());
        assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'legacy' } }, REQUEST)),
          'legacy');
      } finally {
        await client.close();
      }
    });

    test('pinned to 2026-07-28 fails to connect (no fallback)', TEST, async () => {
      const wire = new Wire();
      const client = new Client({ name: 'mcpactord-interop-v2', version: '1.0.0' },
        { versionNegotiation: { mode: { pin: MODERN } } });
      await assert.rejects(
        client.connect(new StreamableHTTPClientTransport(new URL(legacy.url), { fetch: wire.fetch }), REQUEST),
        (error) => error instanceof SdkError && error.code === SdkErrorCode.EraNegotiationFailed,
      );
      await client.close().catch(() => {});
    });
  });
});

describe('SDK v2 default (no versionNegotiation: legacy) against --modern', () => {
  test('initialize: the session era, echo works', TEST, async () => {
    const { client, wire, transport } = await connect();
    try {
      assert.equal(client.getProtocolEra(), 'legacy', wire.dump());
      assert.equal(client.getNegotiatedProtocolVersion(), LEGACY);
      assert.match(transport.sessionId ?? '', /^[0-9a-f]{32}$/);
      assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'session' } }, REQUEST)),
        'session');
    } finally {
      await client.close();
    }
  });
});
