import fs from 'node:fs';
import path from 'node:path';

/** Directories of the working directory named as likely places; a crawl's own holds few. */
const MAX_SUGGESTED = 5;

/** What `crawl run --out DIR` leaves in DIR: its store's records, and its embedded server's SQLite file. */
const MARKS = { records: path.join('store', 'records'), server: path.join('temporal', 'temporal.sqlite') } as const;

/**
 * The directories in `cwd` that hold a crawl's output of that kind, latest first, at most a few: for
 * errors that would otherwise leave an operator guessing which `--data-dir` was meant.
 */
export function crawlOutputsIn(cwd: string, kind: keyof typeof MARKS): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(cwd, { withFileTypes: true });
  } catch {
    return [];
  }
  const found: { name: string; mtimeMs: number }[] = [];
  for (const e of entries) {
    if (!e.isDirectory()) continue;
    try {
      found.push({ name: e.name, mtimeMs: fs.statSync(path.join(cwd, e.name, MARKS[kind])).mtimeMs });
    } catch {
      // Not a crawl's output.
    }
  }
  // The latest crawl first: most likely the one meant.
  return found.sort((a, b) => b.mtimeMs - a.mtimeMs || a.name.localeCompare(b.name)).slice(0, MAX_SUGGESTED).map((f) => f.name);
}
