// What the two conformance runners share (conformance.mjs: the 0.1.x suite; conformance2026.mjs:
// the 2026-07-28 alpha): the Node flags the suites' bundles need here, running a suite with a
// time bound, and reading the per-scenario checks it writes.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import module from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

// Node 20 lacks fs.globSync, which the suites' bundles import (see node20/register.mjs). A Node
// without module.register (before 20.6, e.g. Debian 12's 18) takes the same hook as a loader.
export const nodeArgs = Number(process.versions.node.split('.')[0]) >= 22 ? []
  : typeof module.register === 'function' ? ['--import', path.join(here, 'node20/register.mjs')]
    : ['--no-warnings', '--experimental-loader', pathToFileURL(path.join(here, 'node20/resolve-fs.mjs')).href];

// Runs node with args; kills it after timeoutMs. Resolves {code, signal, out}.
export function run(args, timeoutMs) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out });
    });
  });
}

// The checks of every scenario a run wrote into dir: Map(scenario name -> checks array).
export function readResults(dir) {
  const byScenario = new Map();
  for (const entry of fs.readdirSync(dir)) {
    const file = path.join(dir, entry, 'checks.json');
    if (!fs.existsSync(file)) continue;
    const name = entry.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, '');
    byScenario.set(name, JSON.parse(fs.readFileSync(file, 'utf8')));
  }
  return byScenario;
}
