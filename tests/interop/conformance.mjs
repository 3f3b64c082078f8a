// Runs the server suite of the official MCP conformance package (`--suite all`) against the real
// mcpactord, once per response mode, and fails on any FAILURE or WARNING, on a scenario that did
// not report, or when fewer checks pass than the mode's floor. Prints one line per scenario,
// every check that is not a SUCCESS, and the totals.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from './server.mjs';
import { nodeArgs, readResults, run } from './suite.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const cli = path.join(here, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');

// Checks that pass against this server, per mode. They rise when a check that reports INFO now
// (see the notes) starts to pass; they must never fall.
//   auto: tools/list answers JSON, so server-sse-streams-functional is INFO; test_reconnection
//         answers on its POST stream, so server-sse-disconnect-resume is INFO.
//   sse:  every POST answers SSE: server-sse-streams-functional passes too.
//   json: no POST answers SSE: the SSE polling checks are INFO.
const MODES = [
  { name: 'auto', flags: [], floor: 46 },
  { name: 'sse', flags: ['--response-mode', 'sse'], floor: 47 },
  { name: 'json', flags: ['--response-mode', 'json'], floor: 43 },
];
const RUN_TIMEOUT_MS = 240000;

async function listScenarios() {
  const r = await run([...nodeArgs, cli, 'list', '--server'], 60000);
  const names = [...r.out.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]);
  if (r.code !== 0 || names.length === 0) throw new Error(`conformance list failed:\n${r.out}`);
  return names;
}

const NOISE = new Set(['outgoing-request', 'incoming-response', 'incoming-sse-event']);

async function runMode(mode, scenarios) {
  const problems = [];
  const server = await startServer(['--toolset', 'demo,conformance', ...mode.flags]);
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), `mcpd-conformance-${mode.name}-`));
  const r = await run([...nodeArgs, cli, 'server', '--url', server.url, '--suite', 'all', '-o', outDir],
    RUN_TIMEOUT_MS);
  const status = await server.stop();
  if (r.signal) problems.push(`the suite was killed (${r.signal}) after ${RUN_TIMEOUT_MS} ms`);
  else if (r.code !== 0) problems.push(`the suite exited with ${r.code}`);
  if (status.code !== 0) problems.push(`the server exited with ${JSON.stringify(status)}`);

  const results = readResults(outDir);
  let passed = 0, failed = 0, warnings = 0;
  console.log(`\n== --response-mode ${mode.name} ${mode.flags.length ? '' : '(default) '}==`);
  for (const name of scenarios) {
    const checks = results.get(name);
    if (!checks) {
      problems.push(`scenario ${name} reported no checks`);
      console.log(`  MISSING ${name}`);
      continue;
    }
    const count = (s) => checks.filter((c) => c.status === s).length;
    const [p, f, w] = [count('SUCCESS'), count('FAILURE'), count('WARNING')];
    passed += p;
    failed += f;
    warnings += w;
    console.log(`  ${f ? 'FAIL' : w ? 'WARN' : 'ok  '} ${name}: ${p} passed, ${f} failed, ${w} warnings`);
    for (const c of checks) {
      if (c.status === 'SUCCESS' || NOISE.has(c.id)) continue;
      const why = c.errorMessage ?? c.details?.message ?? c.description;
      console.log(`         [${c.status}] ${c.id}: ${why}`);
    }
  }
  if (failed) problems.push(`${failed} checks failed`);
  if (warnings) problems.push(`${warnings} checks warned`);
  if (passed < mode.floor) problems.push(`${passed} checks passed, fewer than the floor of ${mode.floor}`);
  console.log(`  --suite all, --response-mode ${mode.name}: ${scenarios.length} scenarios, ` +
    `${passed} passed, ${failed} failed, ${warnings} warnings`);
  console.log(`  the suite's own summary: ${r.out.match(/^Total: .*$/m)?.[0] ?? '(none)'}`);
  if (problems.length) {
    console.log(`  PROBLEMS: ${problems.join('; ')}`);
    console.log(`  suite output:\n${r.out.slice(-6000)}\n  server log tail:\n${server.tail()}`);
  } else {
    fs.rmSync(outDir, { recursive: true, force: true });
  }
  return { passed, failed, warnings, problems };
}

const scenarios = await listScenarios();
let totalPassed = 0, totalFailed = 0, bad = 0;
for (const mode of MODES) {
  const r = await runMode(mode, scenarios);
  totalPassed += r.passed;
  totalFailed += r.failed + r.warnings;
  bad += r.problems.length;
}
console.log(`\nconformance: ${totalPassed} passed, ${totalFailed} failed`);
process.exit(bad ? 1 : 0);
