// The official TypeScript SDK client (Client + StreamableHTTPClientTransport) against the real
// mcpactord serving the demo and conformance toolsets. Run by `meson test --suite interop`
// (node's built-in test runner); every wait is bounded.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { after, before } from './hooks.mjs';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  ProgressNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import { startServer } from './server.mjs';

const CAPABILITIES = { sampling: {}, elicitation: {} };

let server;

// MCPD_INTEROP_FLAGS: extra server flags (meson runs this file once per --response-mode).
const EXTRA_FLAGS = (process.env.MCPD_INTEROP_FLAGS ?? '').split(' ').filter(Boolean);
// With --response-mode json a call answers with plain JSON and its messages go session-level:
// there is no POST stream to lose and resume.
const NO_POST_STREAMS = EXTRA_FLAGS.join(' ').includes('--response-mode json')
  && 'with --response-mode json there is no POST stream to resume';

before(async () => {
  server = await startServer(['--toolset', 'demo,conformance', ...EXTRA_FLAGS]);
});

after(async () => {
  const status = await server.stop();
  assert.deepEqual(status, { code: 0, signal: null }, `the server exits 0 on SIGTERM\n${server.tail()}`);
});

// A connected client. A new session's client has its standalone GET stream open on return (the
// SDK opens it after `initialized`; the server attaches it before it answers 200): session-level
// messages sent before that would be stored for a resume, not delivered, which would make the
// tests that count them racy, above all with --response-mode json. A client that joins an
// existing session (sessionId) sends no initialize and opens no GET stream.
async function connect({ capabilities = CAPABILITIES, sessionId } = {}) {
  const client = new Client({ name: 'mcpactord-interop', version: '1.0.0' }, { capabilities });
  let getOpen = false;
  const watchingFetch = async (url, init) => {
    const response = await fetch(url, init);
    if (init?.method === 'GET' && response.ok && !new Headers(init.headers).has('last-event-id')) getOpen = true;
    return response;
  };
  const transport = new StreamableHTTPClientTransport(new URL(server.url), { sessionId, fetch: watchingFetch });
  await client.connect(transport);
  if (!sessionId) await waitFor('the standalone GET stream', () => getOpen);
  return { client, transport };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(what, predicate, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const textOf = (result) => result.content.find((c) => c.type === 'text')?.text;

function collectLogs(client) {
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
  return logs;
}

describe('initialize', () => {
  test('negotiates 2025-11-25 and reports the server and its capabilities', async () => {
    const { client, transport } = await connect();
    assert.match(transport.sessionId, /^[0-9a-f]{32}$/, 'the session id is 32 hex digits');
    assert.equal(transport.protocolVersion, '2025-11-25');
    assert.equal(client.getServerVersion().name, 'mcpactord');
    const caps = client.getServerCapabilities();
    for (const c of ['tools', 'resources', 'prompts', 'logging', 'completions']) {
      assert.ok(caps[c], `the server declares ${c}`);
    }
    assert.equal(caps.resources.subscribe, true, 'the watched resource makes resources subscribable');
    assert.ok(client.getInstructions(), 'the server sends instructions');
    await client.ping();
    await client.close();
  });
});

describe('the demo tools', () => {
  test('tools/list has every demo tool and every conformance tool, each with a description', async () => {
    const { client } = await connect();
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of ['echo', 'add', 'slow', 'counter', 'elicit_name', 'notify', 'test_simple_text',
      'test_sampling', 'test_reconnection', 'json_schema_2020_12_tool']) {
      assert.ok(names.includes(n), `tools/list has ${n}`);
    }
    assert.equal(new Set(names).size, names.length, 'no tool is listed twice');
    for (const t of tools) {
      assert.ok(t.description, `${t.name} has a description`);
      assert.equal(t.inputSchema.type, 'object', `${t.name} has an object input schema`);
    }
    await client.close();
  });

  test('each demo tool answers through the SDK', async () => {
    const { client } = await connect();
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
    const logs = collectLogs(client);

    assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'hello, sdk' } })), 'hello, sdk');
    assert.equal(textOf(await client.callTool({ name: 'add', arguments: { a: 2, b: 40 } })), '42');
    assert.equal(textOf(await client.callTool({ name: 'add', arguments: { a: 0.5, b: 0.25 } })), '0.75');
    assert.equal(textOf(await client.callTool({ name: 'slow', arguments: { seconds: 0.1, steps: 2 } })),
      'done after 2 steps');
    assert.equal(textOf(await client.callTool({ name: 'counter', arguments: {} })), '1');
    assert.equal(textOf(await client.callTool({ name: 'counter', arguments: { by: 41 } })), '42');
    assert.equal(textOf(await client.callTool({ name: 'elicit_name', arguments: {} })), 'Hello, Ada!');
    assert.equal(textOf(await client.callTool({ name: 'notify', arguments: { count: 3 } })), 'sent 3');
    await waitFor('3 log notifications', () => logs.length >= 3);
    assert.deepEqual(logs.map((l) => l.data.n), [1, 2, 3]);
    await client.close();
  });

  test('a session-level notification reaches the standalone GET stream the SDK opened', async () => {
    const { client } = await connect();
    const logs = collectLogs(client);
    assert.equal(textOf(await client.callTool({ name: 'notify', arguments: { count: 2, target: 'session' } })),
      'sent 2');
    await waitFor('2 session-level log notifications', () => logs.length >= 2);
    assert.deepEqual(logs.map((l) => l.data.n), [1, 2]);
    await client.close();
  });

  test('bad arguments come back as a tool error result; an unknown tool as -32602', async () => {
    const { client } = await connect();
    const r = await client.callTool({ name: 'add', arguments: { a: 'one', b: 2 } });
    assert.equal(r.isError, true);
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }),
      (e) => e instanceof McpError && e.code === -32602);
    await client.close();
  });
});

describe('progress', () => {
  test('slow reports every step to the onprogress callback, in order', async () => {
    const { client } = await connect();
    const seen = [];
    const r = await client.callTool({ name: 'slow', arguments: { seconds: 0.4, steps: 4 } }, CallToolResultSchema,
      { onprogress: (p) => seen.push(p) });
    assert.equal(textOf(r), 'done after 4 steps');
    // --response-mode json: the POST answers with plain JSON and the progress goes on the GET
    // stream, another connection (maybe of another HTTP loop): the answer still comes after
    // the last step (the server holds it until the stream's frames are written)
    assert.deepEqual(seen.map((p) => [p.progress, p.total]), [[1, 4], [2, 4], [3, 4], [4, 4]]);
    assert.equal(seen[3].message, 'step 4 of 4');
    await client.close();
  });

  test('every step comes before the result, call after call, with several clients', async () => {
    // 4 sessions, 25 quick calls each: in json mode each session's GET stream and its POSTs are
    // on different HTTP loops about half the time; a result that overtook its last step showed
    // up in about 1 call of 11 before the server held it for the stream
    const run = async () => {
      const { client } = await connect();
      const short = [];
      for (let i = 0; i < 25; i++) {
        const seen = [];
        await client.callTool({ name: 'slow', arguments: { seconds: 0.008, steps: 4 } }, CallToolResultSchema,
          { onprogress: (p) => seen.push(p.progress) });
        if (seen.length !== 4) short.push(seen);
      }
      await client.close();
      return short;
    };
    const short = (await Promise.all([run(), run(), run(), run()])).flat();
    assert.deepEqual(short, [], 'calls whose result came before all 4 steps');
  });

  test('test_tool_with_progress reports 0, 50 and 100 of 100', async () => {
    const { client } = await connect();
    const seen = [];
    await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, CallToolResultSchema,
      { onprogress: (p) => seen.push(p.progress) });
    assert.deepEqual(seen, [0, 50, 100]);
    await client.close();
  });
});

describe('elicitation', () => {
  test('a handler that accepts is greeted by name; one that declines is told so', async () => {
    const { client } = await connect();
    const requests = [];
    let answer = { action: 'accept', content: { name: 'Grace' } };
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      requests.push(req.params);
      return answer;
    });
    assert.equal(textOf(await client.callTool({ name: 'elicit_name', arguments: {} })), 'Hello, Grace!');
    answer = { action: 'decline' };
    assert.equal(textOf(await client.callTool({ name: 'elicit_name', arguments: {} })), 'declined');
    assert.equal(requests.length, 2);
    assert.equal(requests[0].message, 'What is your name?');
    assert.deepEqual(requests[0].requestedSchema.required, ['name']);
    await client.close();
  });

  test('the SEP-1034 defaults and SEP-1330 enum forms reach the handler intact', async () => {
    const { client } = await connect();
    const schemas = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      schemas.push(req.params.requestedSchema);
      return { action: 'cancel' };
    });
    let r = await client.callTool({ name: 'test_elicitation_sep1034_defaults', arguments: {} });
    assert.equal(textOf(r), 'Elicitation completed: action=cancel, content={}');
    const d = schemas[0].properties;
    assert.deepEqual([d.name.default, d.age.default, d.score.default, d.status.default, d.verified.default],
      ['John Doe', 30, 95.5, 'active', true]);
    r = await client.callTool({ name: 'test_elicitation_sep1330_enums', arguments: {} });
    assert.match(textOf(r), /^Elicitation completed: action=cancel/);
    const e = schemas[1].properties;
    assert.deepEqual(e.titledSingle.oneOf[0], { const: 'value1', title: 'First Option' });
    assert.deepEqual(e.legacyEnum.enumNames, ['Option One', 'Option Two', 'Option Three']);
    assert.deepEqual(e.titledMulti.items.anyOf[2], { const: 'value3', title: 'Third Choice' });
    await client.close();
  });
});

describe('cancellation and client errors', () => {
  test('a request the SDK aborts is cancelled on the server: no more progress, no result', async () => {
    const { client } = await connect();
    const progress = [];
    client.setNotificationHandler(ProgressNotificationSchema, (n) => progress.push(n.params.progress));
    const abort = new AbortController();
    const call = client.request({ method: 'tools/call', params: { name: 'slow',
      arguments: { seconds: 5, steps: 50 }, _meta: { progressToken: 'cancel-me' } } },
    CallToolResultSchema, { signal: abort.signal });
    await waitFor('2 progress notifications', () => progress.length >= 2);
    abort.abort('the user gave up');
    await assert.rejects(call, 'the aborted request rejects');
    // notifications/cancelled reaches the server and anything in flight lands: wait for 500 ms
    // without progress (slow sends one every 100 ms while it runs), at most 4 s, as long as a
    // loaded machine takes
    let settled = progress.length, quiet = 0;
    for (const until = Date.now() + 4000; quiet < 500 && Date.now() < until;) {
      await sleep(100);
      if (progress.length === settled) quiet += 100;
      else [settled, quiet] = [progress.length, 0];
    }
    assert.ok(quiet >= 500, `the handler stopped: progress still came 4 s after the abort (${progress.length} of 50)`);
    assert.ok(settled < 20, `progress stopped early (${settled} of 50)`);
    assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'still here' } })), 'still here');
    await client.close();
  });

  test('a client that declares elicitation but has no handler answers with an error: a tool error', async () => {
    const { client } = await connect();
    const r = await client.callTool({ name: 'elicit_name', arguments: {} });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /elicitation failed: the client answered with error -32601/);
    await client.close();
  });
});

describe('sampling', () => {
  test('test_sampling asks the client handler and returns its answer', async () => {
    const { client } = await connect();
    const requests = [];
    client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
      requests.push(req.params);
      return { role: 'assistant', content: { type: 'text', text: 'forty-two' }, model: 'interop-model',
        stopReason: 'endTurn' };
    });
    const r = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'What is six times seven?' } });
    assert.equal(textOf(r), 'LLM response: forty-two');
    assert.equal(requests.length, 1);
    assert.deepEqual(requests[0].messages, [{ role: 'user', content: { type: 'text', text: 'What is six times seven?' } }]);
    assert.equal(requests[0].maxTokens, 100);
    await client.close();
  });

  test('a client without the sampling capability gets a tool error, not a hang', async () => {
    const { client } = await connect({ capabilities: {} });
    const r = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'hi' } });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /sampling/);
    await client.close();
  });
});

describe('logging', () => {
  test('logging/setLevel filters the log notifications of later calls', async () => {
    const { client } = await connect();
    const logs = collectLogs(client);
    await client.setLoggingLevel('warning');
    await client.callTool({ name: 'notify', arguments: { count: 2 } });
    await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
    await sleep(200);
    assert.equal(logs.length, 0, 'info messages are dropped at level warning');
    await client.setLoggingLevel('info');
    await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
    await waitFor('3 log notifications', () => logs.length >= 3);
    assert.deepEqual(logs.map((l) => [l.level, l.data]), [['info', 'Tool execution started'],
      ['info', 'Tool processing data'], ['info', 'Tool execution completed']]);
    await client.close();
  });
});

describe('resources, prompts and completion', () => {
  test('resources list, read (text, binary, template) and subscribe', async () => {
    const { client } = await connect();
    const { resources } = await client.listResources();
    assert.deepEqual(resources.map((r) => r.uri).sort(),
      ['test://static-binary', 'test://static-text', 'test://watched-resource']);
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate), ['test://template/{id}/data']);

    let r = await client.readResource({ uri: 'test://static-text' });
    assert.deepEqual(r.contents, [{ uri: 'test://static-text', mimeType: 'text/plain',
      text: 'This is the content of the static text resource.' }]);
    r = await client.readResource({ uri: 'test://static-binary' });
    assert.equal(r.contents[0].mimeType, 'image/png');
    assert.equal(Buffer.from(r.contents[0].blob, 'base64').subarray(1, 4).toString(), 'PNG');
    r = await client.readResource({ uri: 'test://template/abc/data' });
    assert.deepEqual(JSON.parse(r.contents[0].text), { id: 'abc', templateTest: true, data: 'Data for ID: abc' });

    assert.deepEqual(await client.subscribeResource({ uri: 'test://watched-resource' }), {});
    assert.deepEqual(await client.unsubscribeResource({ uri: 'test://watched-resource' }), {});
    await assert.rejects(client.readResource({ uri: 'test://no-such-resource' }),
      (e) => e instanceof McpError && e.code === -32002);
    await client.close();
  });

  test('prompts list and get, with arguments and embedded content', async () => {
    const { client } = await connect();
    const { prompts } = await client.listPrompts();
    assert.deepEqual(prompts.map((p) => p.name).sort(), ['test_input_required_result_prompt',
      'test_prompt_with_arguments', 'test_prompt_with_embedded_resource', 'test_prompt_with_image',
      'test_simple_prompt']);
    let r = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b' } });
    assert.equal(r.messages[0].content.text, "Prompt with arguments: arg1='a', arg2='b'");
    r = await client.getPrompt({ name: 'test_prompt_with_embedded_resource', arguments: { resourceUri: 'test://x' } });
    assert.equal(r.messages[0].content.resource.uri, 'test://x');
    r = await client.getPrompt({ name: 'test_prompt_with_image' });
    assert.equal(r.messages[0].content.type, 'image');
    await assert.rejects(client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'a' } }),
      (e) => e instanceof McpError && e.code === -32602);
    await assert.rejects(client.getPrompt({ name: 'no_such_prompt' }),
      (e) => e instanceof McpError && e.code === -32602);
    await client.close();
  });

  test('completion suggests prompt arguments and template variables', async () => {
    const { client } = await connect();
    let r = await client.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
      argument: { name: 'arg1', value: 'par' } });
    assert.deepEqual(r.completion, { values: ['paris', 'park', 'party'], total: 3, hasMore: false });
    r = await client.complete({ ref: { type: 'ref/resource', uri: 'test://template/{id}/data' },
      argument: { name: 'id', value: '1' } });
    assert.deepEqual(r.completion.values, ['1', '123']);
    r = await client.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
      argument: { name: 'arg2', value: 'zzz' } });
    assert.deepEqual(r.completion.values, [], 'no candidate is an empty list, not an error');
    await assert.rejects(client.complete({ ref: { type: 'ref/prompt', name: 'no_such_prompt' },
      argument: { name: 'x', value: '' } }), (e) => e instanceof McpError && e.code === -32602);
    await client.close();
  });

  test('json_schema_2020_12_tool keeps its 2020-12 keywords and validates against them', async () => {
    const { client } = await connect();
    const { tools } = await client.listTools();
    const schema = tools.find((t) => t.name === 'json_schema_2020_12_tool').inputSchema;
    assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema');
    assert.deepEqual(Object.keys(schema.$defs), ['address']);
    assert.equal(schema.additionalProperties, false);
    const ok = await client.callTool({ name: 'json_schema_2020_12_tool',
      arguments: { name: 'Ada', address: { street: '1 Loop Rd', city: 'Localhost' },
        contactMethod: 'email', email: 'ada@localhost' } });
    assert.ok(!ok.isError, textOf(ok));
    assert.ok(Array.isArray(schema.allOf) && schema.if && schema.then && schema.else,
      'composition and conditional keywords are listed as registered (SEP-2106)');
    const bad = await client.callTool({ name: 'json_schema_2020_12_tool',
      arguments: { name: 'Ada', email: 'ada@localhost', contactMethod: 'email', extra: 1 } });
    assert.equal(bad.isError, true, 'additionalProperties: false is enforced');
    await client.close();
  });
});

describe('session end', () => {
  test('terminateSession() ends the session: its id then gets 404, also through the SDK', async () => {
    const { client, transport } = await connect();
    const sessionId = transport.sessionId;
    await transport.terminateSession();
    assert.equal(transport.sessionId, undefined);
    const r = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(r.status, 404);
    assert.equal((await r.json()).error.code, -32001);
    await client.close();

    const again = await connect({ sessionId });
    await assert.rejects(again.client.ping(), (e) => e.code === 404);
    await again.client.close();
  });
});

describe('resumption', () => {
  // Calls slow (6 steps over 1.2 s) with a progress token, drops the connection after two
  // progress notifications, then resumes on a new transport with the last resumption token.
  // resumeAfterMs: how long the client stays away (long enough for the call to finish or not).
  async function dropAndResume(resumeAfterMs) {
    const progress = [];
    const first = await connect();
    first.client.setNotificationHandler(ProgressNotificationSchema, (n) => progress.push(n.params.progress));
    let token;
    const call = { method: 'tools/call',
      params: { name: 'slow', arguments: { seconds: 1.2, steps: 6 }, _meta: { progressToken: 'resume-me' } } };
    const lost = first.client.request(call, CallToolResultSchema, { onresumptiontoken: (t) => (token = t) });
    lost.catch(() => {}); // it fails when the connection goes
    await waitFor('2 progress notifications', () => progress.length >= 2);
    await first.client.close(); // aborts the POST stream mid-call
    await assert.rejects(lost, 'the dropped request fails on the first client');
    assert.ok(token, 'the POST stream gave a resumption token');
    await sleep(resumeAfterMs);

    const second = await connect({ sessionId: first.transport.sessionId });
    second.client.setNotificationHandler(ProgressNotificationSchema, (n) => progress.push(n.params.progress));
    let results = 0;
    const deliver = second.transport.onmessage;
    second.transport.onmessage = (msg, extra) => {
      if ('result' in msg) results++;
      deliver(msg, extra);
    };
    const result = await second.client.request(call, CallToolResultSchema,
      { resumptionToken: token, onresumptiontoken: (t) => (token = t), timeout: 10000 });
    assert.equal(textOf(result), 'done after 6 steps');
    await sleep(300); // anything sent twice would arrive now
    assert.equal(results, 1, 'the final result arrives exactly once');
    assert.deepEqual(progress, [1, 2, 3, 4, 5, 6], 'every progress notification arrives once, in order');
    await second.client.close();
  }

  test('a client that loses the connection during slow resumes the live call with its token',
    { skip: NO_POST_STREAMS }, async () => {
    await dropAndResume(0);
  });

  test('a client that comes back after slow finished gets the rest and the result from the log',
    { skip: NO_POST_STREAMS }, async () => {
    await dropAndResume(1500);
  });

  test('test_reconnection answers through the SDK, exactly once', async () => {
    const { client, transport } = await connect();
    let results = 0;
    const deliver = transport.onmessage;
    transport.onmessage = (msg, extra) => {
      if ('result' in msg) results++;
      deliver(msg, extra);
    };
    const r = await client.callTool({ name: 'test_reconnection', arguments: {} }, CallToolResultSchema,
      { timeout: 15000 });
    assert.match(textOf(r), /^Reconnection test completed successfully/);
    await sleep(300);
    assert.equal(results, 1);
    await client.close();
  });
});
