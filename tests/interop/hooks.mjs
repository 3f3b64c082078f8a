// before() and after() for the interop tests: node:test's hooks with a time limit, and the test
// process's uncaught errors printed with their stack.
//
// Why: on Node 20, an error thrown from a callback (an event, a timer) while a describe's hook
// runs is swallowed by the test runner and the hook never settles: the file then hangs, silent,
// until meson's timeout, with no word of which hook or which error. A hook with a timeout fails
// instead, and the runner names the error it swallowed; the listener below prints its stack.
import { after as nodeAfter, before as nodeBefore } from 'node:test';

// Longer than any hook needs (a deploy is an issuer and a server start, under 30 s on a loaded
// machine), shorter than meson's 600 s for the whole file.
export const HOOK_TIMEOUT_MS = 120000;

export const before = (fn, options = {}) => nodeBefore(fn, { timeout: HOOK_TIMEOUT_MS, ...options });
export const after = (fn, options = {}) => nodeAfter(fn, { timeout: HOOK_TIMEOUT_MS, ...options });

// A listener only adds the printing: node:test's own handler still fails the test it can blame.
process.on('uncaughtException', (err, origin) => {
  console.error(`uncaught ${origin} in the test process:`, err);
});
