// node:fs with a globSync for Node versions before 22. The suite calls it once, as
// globSync('**/checks.json', { cwd }) in its tier-check command; this covers patterns made of
// '/'-separated segments where a segment is '**' (any number of directories) or a name with
// '*' and '?' wildcards. Results are paths relative to cwd, like Node 22's.
import fs from 'node:fs';
import path from 'node:path';

export * from 'node:fs';
export default fs;

function segmentMatcher(segment) {
  let source = '';
  for (const ch of segment) {
    if (ch === '*') source += '[^/]*';
    else if (ch === '?') source += '[^/]';
    else source += ch.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
  }
  const re = new RegExp(`^${source}$`);
  return (name) => re.test(name);
}

// Does the relative path (an array of names) match the pattern segments?
function matches(names, segments) {
  if (segments.length === 0) return names.length === 0;
  const [head, ...rest] = segments;
  if (head === '**') {
    for (let skip = 0; skip <= names.length; skip++) {
      if (matches(names.slice(skip), rest)) return true;
    }
    return false;
  }
  return names.length > 0 && segmentMatcher(head)(names[0]) && matches(names.slice(1), rest);
}

export function globSync(patterns, options = {}) {
  const cwd = options.cwd ? String(options.cwd instanceof URL ? options.cwd.pathname : options.cwd) : process.cwd();
  const list = (Array.isArray(patterns) ? patterns : [patterns]).map((p) => p.split('/').filter((s) => s !== ''));
  const found = [];
  const walk = (dir, names) => {
    let entries;
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const rel = [...names, entry.name];
      if (list.some((segments) => matches(rel, segments))) found.push(rel.join(path.sep));
      if (entry.isDirectory()) walk(path.join(dir, entry.name), rel);
    }
  };
  walk(cwd, []);
  return found;
}
