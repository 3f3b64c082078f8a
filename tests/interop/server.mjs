// Starts the real mcpactord for the interop tests: loopback only, ports picked by the kernel,
// a fresh data directory, stderr kept in a log file. The binary comes from $MCPACTORD (meson
// sets it). Every wait is bounded. restart() stops the server and starts it again on the same
// data directory and port (durability across a restart).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

const BINARY = process.env.MCPACTORD ?? path.resolve('../../src/mcpactord');

// dir and listenPort are for restart(): an existing directory (its data and log are kept) and the
// port to listen on (0: the kernel picks one). env: variables added to the server's environment.
export async function startServer(flags = [], { startTimeoutMs = 15000, dir: reuseDir, listenPort = 0, env } = {}) {
  const dir = reuseDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'mcpd-interop-'));
  const logPath = path.join(dir, 'server.log');
  const log = fs.openSync(logPath, 'a');
  const args = ['--listen', `127.0.0.1:${listenPort}`, '--admin-listen', '127.0.0.1:0', '--data-dir',
    path.join(dir, 'data'), '--log-level', 'debug', ...flags];
  const proc = spawn(BINARY, args, { stdio: ['ignore', 'pipe', log], env: env ? { ...process.env, ...env } : process.env });
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
    pid: proc.pid,
    adminPort: Number(fields.admin_port),
    url: `http://127.0.0.1:${port}/mcp`,
    logPath,
    tail,
    // SIGTERM, then the exit status ({code, signal}); SIGKILL after timeoutMs. The directory is
    // removed after a clean exit unless keepDir (or MCPD_TEST_KEEP) says otherwise.
    async stop(timeoutMs = 10000, { keepDir = false } = {}) {
      if (!stopped) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
        stopped = exited.then((status) => {
          clearTimeout(timer);
          if (status.code === 0 && !keepDir && !process.env.MCPD_TEST_KEEP) fs.rmSync(dir, { recursive: true, force: true });
          return status;
        });
      }
      return stopped;
    },
    // SIGKILL (a crash: nothing is flushed or closed by the server), then a new server with the
    // same flags, data directory and port; resolves to the new server's handle.
    async crashRestart() {
      proc.kill('SIGKILL');
      const status = await exited;
      if (status.signal !== 'SIGKILL') throw new Error(`mcpactord exited before the SIGKILL: ${JSON.stringify(status)}\n${tail()}`);
      return startServer(flags, { startTimeoutMs, dir, listenPort: port, env });
    },
    // Stops this server (its exit status must be clean) and starts a new one with the same flags,
    // data directory and port; resolves to the new server's handle.
    async restart({ timeoutMs = 10000 } = {}) {
      const status = await this.stop(timeoutMs, { keepDir: true });
      if (status.code !== 0) throw new Error(`mcpactord did not exit cleanly before the restart: ${JSON.stringify(status)}\n${tail()}`);
      return startServer(flags, { startTimeoutMs, dir, listenPort: port, env });
    },
  };
}
