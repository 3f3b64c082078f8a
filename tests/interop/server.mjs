// Starts the real mcpactord for the interop tests: loopback only, ports picked by the kernel,
// a fresh data directory, stderr kept in a log file. The binary comes from $MCPACTORD (meson
// sets it). Every wait is bounded.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

const BINARY = process.env.MCPACTORD ?? path.resolve('../../src/mcpactord');

export async function startServer(flags = [], { startTimeoutMs = 15000 } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpd-interop-'));
  const logPath = path.join(dir, 'server.log');
  const log = fs.openSync(logPath, 'a');
  const args = ['--listen', '127.0.0.1:0', '--admin-listen', '127.0.0.1:0', '--data-dir',
    path.join(dir, 'data'), '--log-level', 'debug', ...flags];
  const proc = spawn(BINARY, args, { stdio: ['ignore', 'pipe', log] });
  fs.closeSync(log);
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));

  const ready = await new Promise((resolve) => {
    const lines = readline.createInterface({ input: proc.stdout });
    const timer = setTimeout(() => resolve(null), startTimeoutMs);
    lines.on('line', (line) => {
      if (line.startsWith('READY')) {
        clearTimeout(timer);
        resolve(line);
      }
    });
    exited.then(() => resolve(null));
  });
  const tail = (n = 4000) => {
    try {
      return fs.readFileSync(logPath, 'utf8').slice(-n);
    } catch {
      return '';
    }
  };
  if (!ready) {
    proc.kill('SIGKILL');
    throw new Error(`mcpactord did not start (${BINARY} ${args.join(' ')}):\n${tail()}`);
  }
  const fields = Object.fromEntries(ready.split(/\s+/).slice(1).map((kv) => kv.split('=')));
  const port = Number(fields.port);
  let stopped = null;
  return {
    port,
    adminPort: Number(fields.admin_port),
    url: `http://127.0.0.1:${port}/mcp`,
    logPath,
    tail,
    // SIGTERM, then the exit status ({code, signal}); SIGKILL after timeoutMs.
    async stop(timeoutMs = 10000) {
      if (!stopped) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
        stopped = exited.then((status) => {
          clearTimeout(timer);
          if (status.code === 0 && !process.env.MCPD_TEST_KEEP) fs.rmSync(dir, { recursive: true, force: true });
          return status;
        });
      }
      return stopped;
    },
  };
}
