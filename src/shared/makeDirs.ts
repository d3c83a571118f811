import fs from 'node:fs';
import path from 'node:path';

/**
 * `mkdir -p` without Node's `{ recursive: true }`, which loops for ever at 100% CPU where a
 * directory exists but answers ENOENT for a child it cannot hold: procfs does (`crawl run --out
 * /proc/x` hung, its event loop frozen, with no word; nodejs/node's mkdirp takes ENOENT to mean
 * "make the parent first" and the parent always exists). Here each missing level is made on its
 * own, so such a directory ends with its error. Returns the first directory made, as
 * mkdirSync(dir, { recursive: true }) does, or undefined when there was none to make.
 */
export function makeDirsSync(dir: string): string | undefined {
  const missing: string[] = [];
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    let found: fs.Stats;
    try {
      found = fs.statSync(d);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTDIR') throw fileInTheWay(d, err as NodeJS.ErrnoException);
      if (code !== 'ENOENT') throw err;
      missing.push(d);
      if (path.dirname(d) === d) break; // a root that does not exist: mkdir says why
      continue;
    }
    if (!found.isDirectory()) throw notADirectory(d);
    break;
  }
  let first: string | undefined;
  for (const d of missing.reverse()) {
    try {
      fs.mkdirSync(d);
      first ??= d;
    } catch (err) {
      // Made meanwhile by another put; a dangling symlink's mkdir below it fails with ENOENT.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  return first;
}

function notADirectory(file: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${file} is a file, not a directory`), { code: 'ENOTDIR' });
}

/**
 * Node's ENOTDIR names the path asked for (`stat 'out/store'`), not the file in the way (`out`,
 * given as `--out` by mistake): this error names that one.
 */
function fileInTheWay(dir: string, err: NodeJS.ErrnoException): NodeJS.ErrnoException {
  for (let d = path.dirname(dir); path.dirname(d) !== d; d = path.dirname(d)) {
    try {
      if (!fs.statSync(d).isDirectory()) return notADirectory(d);
    } catch {
      // Further up.
    }
  }
  return err;
}
