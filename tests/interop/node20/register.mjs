// Node 20 support for the conformance suite, loaded with `node --import <this file>`.
//
// @modelcontextprotocol/conformance 0.1.x is built for Node 22: its bundle has
// `import { globSync } from "fs"`, an export Node 20 lacks, so the bundle fails to link before it
// runs. On a Node without fs.globSync this registers a resolve hook (resolve-fs.mjs) that gives
// the modules of that package an `fs` which is node:fs plus a small globSync (fs-glob.mjs).
// On Node 22 and later it does nothing.
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
  register('./resolve-fs.mjs', import.meta.url);
}
