// Module resolve hook (runs on the loader thread): `fs` and `node:fs` imported from inside the
// conformance package resolve to fs-glob.mjs; everything else resolves as usual.
const FS_WITH_GLOB = new URL('./fs-glob.mjs', import.meta.url).href;
const PACKAGE_DIR = '/node_modules/@modelcontextprotocol/conformance/';

export async function resolve(specifier, context, nextResolve) {
  const fromSuite = context.parentURL !== undefined && context.parentURL.includes(PACKAGE_DIR);
  if (fromSuite && (specifier === 'fs' || specifier === 'node:fs')) {
    return { url: FS_WITH_GLOB, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
