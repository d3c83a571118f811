import fs from 'node:fs';
import { checkWritable, replaceFile } from '../shared/replaceFile';

/**
 * `crawl export --since TIME` and `--cursor FILE`: the records written since an earlier export,
 * for loading a running crawl's results into a database a piece at a time instead of all of
 * them each time. Times are when a record file was written to the store, by the store's clock
 * (a file's mtime, S3's LastModified), not the records' `recordedAt`: a record kept through a
 * store outage is written long after it was recorded, and would be missed.
 */

/**
 * How far before the newest file an export saw the next one starts. A file being written while
 * the store was listed carries the time its write began (S3 dates an object by its request; a
 * local file by its last write, before the sync and rename that show it): up to a put's timeout
 * (60 s on S3) earlier than files already listed. The next export looks again at the files of
 * those minutes, passing over the ones this one gave (see Cursor).
 */
export const CURSOR_OVERLAP_MS = 2 * 60_000;

const AGO = /^(\d+(?:\.\d+)?)\s*(s|m|h|d)$/i;
const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** An ISO 8601 date, or date and time (a space for the T, seconds and offset optional). */
const ISO = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/** `--since`: an ISO 8601 time (UTC unless it gives an offset), or a span ago (`90m`, `2h`, `7d`). */
export function parseSince(value: string, now = Date.now()): number {
  const v = value.trim();
  const ago = AGO.exec(v);
  if (ago) return now - Number(ago[1]) * UNIT_MS[ago[2]!.toLowerCase()]!;
  if (ISO.test(v)) {
    // Without an offset, UTC: the same moment whichever machine's time zone reads it.
    const withZone = /[T ]\d{2}:\d{2}/.test(v) && !/(Z|[+-]\d{2}:?\d{2})$/i.test(v) ? `${v.replace(' ', 'T')}Z` : v.replace(' ', 'T');
    const ms = Date.parse(withZone);
    if (Number.isFinite(ms)) return ms;
  }
  throw new Error(`--since ${JSON.stringify(value)}: give a time (2026-12-01, 2026-12-01T09:30:00Z; UTC unless it gives an offset) or a span ago (45m, 6h, 7d)`);
}

/** Where an export starts: a time, and the files at or after it that earlier exports gave already. */
export interface Cursor {
  since: number;
  /** Record files (key -> the time it was written) given already: passed over unless written again. */
  given?: ReadonlyMap<string, number>;
}

/**
 * The cursor a file holds, as writeCursor writes it (or a time alone, as a person would write
 * one); undefined when there is no such file (the first export: everything).
 */
export function readCursor(file: string): Cursor | undefined {
  // Before the export, not once it is written: a cursor that cannot be moved on would have it given again.
  checkWritable(file);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read the cursor ${file}: ${(err as Error).message}`);
  }
  const cursor = text.startsWith('{') ? cursorOfJson(text) : ISO.test(text) ? { since: Date.parse(text) } : undefined;
  if (!cursor || !Number.isFinite(cursor.since)) {
    throw new Error(`the cursor ${file} holds no time (${JSON.stringify(text.slice(0, 40))}): it holds where the next export starts, as \`crawl export --cursor\` writes it; remove it to export everything again`);
  }
  return cursor;
}

function cursorOfJson(text: string): Cursor | undefined {
  let v: { since?: unknown; given?: unknown };
  try {
    v = JSON.parse(text) as typeof v;
  } catch {
    return undefined;
  }
  if (typeof v.since !== 'string' || !ISO.test(v.since)) return undefined;
  const given = new Map<string, number>();
  if (typeof v.given === 'object' && v.given !== null) {
    for (const [key, at] of Object.entries(v.given)) if (typeof at === 'string' && Number.isFinite(Date.parse(at))) given.set(key, Date.parse(at));
  }
  return { since: Date.parse(v.since), ...(given.size ? { given } : {}) };
}

export async function writeCursor(file: string, cursor: Cursor): Promise<void> {
  const given = Object.fromEntries([...(cursor.given ?? [])].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, ms]) => [key, new Date(ms).toISOString()]));
  await replaceFile(file, async (write) => write(`${JSON.stringify({ since: new Date(cursor.since).toISOString(), given }, null, 1)}\n`));
}

/**
 * The files an export listed that were written within CURSOR_OVERLAP_MS of the newest: all the
 * next export needs to pass over what this one gave. Bounded by what a crawl writes in that
 * while (hundreds of files), not by the store.
 */
export class RecentFiles {
  newest = 0;
  private files = new Map<string, number>();
  private pruneAt = PRUNE_AT;

  add(key: string, ms: number): void {
    if (ms > this.newest) this.newest = ms;
    if (ms < this.newest - CURSOR_OVERLAP_MS) return;
    this.files.set(key, ms);
    if (this.files.size > this.pruneAt) this.prune();
  }

  /** Where the next export starts (never before `since`: the files between were given), and the files from there on. */
  next(since: number | undefined): Cursor | undefined {
    if (!this.newest) return since === undefined ? undefined : { since };
    const from = Math.max(since ?? 0, this.newest - CURSOR_OVERLAP_MS);
    return { since: from, given: new Map([...this.files].filter(([, ms]) => ms >= from)) };
  }

  private prune(): void {
    this.files = new Map([...this.files].filter(([, ms]) => ms >= this.newest - CURSOR_OVERLAP_MS));
    this.pruneAt = Math.max(PRUNE_AT, 2 * this.files.size);
  }
}

const PRUNE_AT = 40_000;
