// Module resolve hook (runs on the loader thread): `fs` and `node:fs` imported from inside the
// conformance package resolve to fs-glob.mjs; everything else resolves as usual.
const FS_WITH_GLOB = new URL('./fs-glob.mjs', import.meta.url).href;
// the suite, and its 2026-07-28 alpha installed under the npm alias conformance-alpha
const PACKAGE_DIRS = ['/node_modules/@modelcontextprotocol/conformance/',
  '/node_modules/conformance-alpha/'];

export async function resolve(specifier, context, nextResolve) {
  const fromSuite = context.parentURL !== undefined &&
    PACKAGE_DIRS.some((d) => context.parentURL.includes(d));
  if (fromSuite && (specifier === 'fs' || specifier === 'node:fs')) {
    return { url: FS_WITH_GLOB, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
