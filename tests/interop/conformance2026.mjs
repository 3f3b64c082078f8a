// Runs the conformance suite of the 2026-07-28 revision (the pinned alpha, installed as the
// npm alias conformance-alpha) against ONE running mcpactord --modern: the requirement sets of
// both eras (`--requirements 2026-07-28`, `--requirements 2025-11-25`) and `--suite all`.
// Fails on any FAILURE or WARNING in any scenario, the tasks extension's (SEP-2663) included
// (the suite does not score extensions; this runner does).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from './server.mjs';
import { nodeArgs, readResults, run } from './suite.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const cli = path.join(here, 'node_modules/conformance-alpha/dist/index.js');
const RUN_TIMEOUT_MS = 300000;
const NOISE = new Set(['outgoing-request', 'incoming-response', 'incoming-sse-event',
  'incoming-request', 'outgoing-response', 'outgoing-sse-event']);

// Checks that pass against this server, per set: a check that silently turns into SKIPPED or
// INFO (a tasks-* check whose setup failed, say) lowers the count. They must never fall.
const FLOORS = { '--requirements 2026-07-28': 196, '--requirements 2025-11-25': 83, '--suite all': 233 };

async function runSet(server, label, args) {
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpd-conf2026-'));
  const r = await run([...nodeArgs, cli, 'server', '--url', server.url, ...args, '-o', outDir],
    RUN_TIMEOUT_MS);
  const problems = [];
  if (r.signal) problems.push(`the suite was killed (${r.signal})`);
  const results = readResults(outDir);
  if (results.size === 0) problems.push('no scenario reported');
  let passed = 0, failed = 0;
  console.log(`\n== ${label} ==`);
  for (const [name, checks] of [...results].sort()) {
    const bad = checks.filter((c) => (c.status === 'FAILURE' || c.status === 'WARNING') && !NOISE.has(c.id));
    const ok = checks.filter((c) => c.status === 'SUCCESS').length;
    passed += ok;
    failed += bad.length;
    console.log(`  ${bad.length ? 'FAIL' : 'ok  '} ${name}: ${ok} passed, ${bad.length} failed`);
    for (const c of bad)
      console.log(`         [${c.status}] ${c.id}: ${c.errorMessage ?? c.description}`);
  }
  if (failed) problems.push(`${failed} checks failed or warned`);
  if (passed < FLOORS[label]) problems.push(`${passed} checks passed, fewer than the floor of ${FLOORS[label]}`);
  console.log(`  ${label}: ${passed} passed, ${failed} failed; the suite's summary: ` +
    `${r.out.match(/^Total: .*$/m)?.[0] ?? '(none)'}`);
  if (problems.length) {
    console.log(`  PROBLEMS: ${problems.join('; ')}\n  suite output:\n${r.out.slice(-4000)}`);
  } else {
    fs.rmSync(outDir, { recursive: true, force: true });
  }
  return problems.length;
}

const server = await startServer(['--modern', '--toolset', 'conformance,demo']);
let bad = 0;
bad += await runSet(server, '--requirements 2026-07-28', ['--requirements', '2026-07-28']);
bad += await runSet(server, '--requirements 2025-11-25', ['--requirements', '2025-11-25']);
bad += await runSet(server, '--suite all', ['--suite', 'all']);
const status = await server.stop();
if (status.code !== 0) {
  console.log(`the server exited with ${JSON.stringify(status)}\n${server.tail()}`);
  bad++;
}
console.log(`\nconformance 2026-07-28 (alpha) and 2025-11-25 on one server: ${bad ? 'FAILED' : 'ok'}`);
process.exit(bad ? 1 : 0);
