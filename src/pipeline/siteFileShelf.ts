import { log } from '../shared/log';
import { sourceSegment } from './keys';
import type { ObjectStore } from './store';

/**
 * A site's own files (robots.txt, tdmrep.json) kept in the store, so that the workers writing
 * to it (and later runs over it) ask the site for an origin's file once a day between them, not
 * each worker process once: with ten workers a site saw its robots.txt asked ten times, and a
 * worker's first request could come sooner than the file's Crawl-delay after another worker's
 * image request. Answers that settle the file are kept for a day (see KEPT_STATUS); a
 * robots.txt the site answered with trouble (5xx, 429, 408) is kept as `unreadable` until it is
 * to be asked again, so that a site in trouble is asked on one schedule, not on each worker's.
 */
export interface SharedSiteFile {
  /** When the file was fetched from the site (epoch ms): it is good for a day from then. */
  fetchedAtMs: number;
  status: number;
  /** The file's text as read (robots.txt: its first 512 KiB) for a 2xx; absent otherwise (no file). */
  rules?: string;
  /**
   * robots.txt only: the site answered with trouble. `tries`: reads that failed in a row, by any
   * worker; `retryAtMs`: when it is to be asked again (epoch ms).
   */
  unreadable?: { reason: string; tries: number; retryAtMs: number };
}

/**
 * Workers that read one kept file would all find it expired at the same moment and ask the site
 * together. Each look takes a kept file for up to this much less than its lifetime, at random,
 * so the first to find it expired asks the site and keeps the new file, and the others read that.
 */
const SHELF_SPREAD_MS = 3600_000;

/** A lifetime for a kept file: `ttlMs`, less up to an hour (a tenth of it at most) at random. */
export function spreadTtlMs(ttlMs: number): number {
  return ttlMs - Math.floor(Math.random() * Math.min(SHELF_SPREAD_MS, ttlMs / 10));
}

/** A file of a site's own that the workers read before its images. */
export type SiteFile = 'robots.txt' | 'tdmrep.json';

/** Kept beside the other work files, one small object per origin, a directory per file (a directory per origin cost the local store a mkdir each). */
export function siteFileKey(file: SiteFile, origin: string): string {
  return `sites/${file}/${sourceSegment(origin)}.json`;
}

export function robotsKey(origin: string): string {
  return siteFileKey('robots.txt', origin);
}

/**
 * The site's own answers of trouble: asked again soon, never taken as the file (a 429 or 408 is
 * not a 4xx that says there is none). Kept as `unreadable` for robots.txt. Not a failure to
 * connect or a timeout: those may be the worker's own network, and would hold the site's URLs
 * at every other worker.
 */
export function siteInTrouble(status: number): boolean {
  return (status >= 500 && status < 600) || status === 429 || status === 408;
}

/**
 * The answers that settle a file for a day, by status (a 2xx with its text); the others are
 * asked again soon. robots.txt: a file, or a 4xx that means none
 * (RobotsCache.load). tdmrep.json: anything but trouble, a redirect or a 404 being no file.
 */
const KEPT_STATUS: Record<SiteFile, (status: number) => boolean> = {
  'robots.txt': (s) => (s >= 200 && s < 300) || (s >= 400 && s < 500 && !siteInTrouble(s)),
  'tdmrep.json': (s) => s >= 200 && s < 500 && !siteInTrouble(s),
};

const SHARES_TROUBLE: Record<SiteFile, boolean> = { 'robots.txt': true, 'tdmrep.json': false };
const MAX_REASON_CHARS = 500;

/** A fetchedAtMs this far ahead of our clock is a skewed or damaged entry, not a file to trust for a day. */
const MAX_FUTURE_MS = 5 * 60_000;

/**
 * How long a look in the store may take before the site is asked instead: the robots.txt request
 * waits for it, and an S3 store that hangs would otherwise hold a new origin for its 60 s
 * request timeout. A GET takes milliseconds when the store is well.
 */
export const SHELF_READ_TIMEOUT_MS = 2_000;

export class SiteFileShelf {
  /** Writes under way: not awaited by the reads that made them, so that no image waits for one. */
  private readonly writes = new Set<Promise<void>>();

  constructor(private readonly store: ObjectStore, readonly file: SiteFile, private readonly readTimeoutMs = SHELF_READ_TIMEOUT_MS) {}

  /** Writes under way have finished (tests wait for them before a second worker looks). */
  async settled(): Promise<void> {
    while (this.writes.size) await Promise.all([...this.writes]);
  }

  /**
   * The origin's kept file while it is younger than `ttlMs`, else undefined (also when the store
   * cannot be read in time). An `unreadable` entry is returned past its retryAtMs too: its count
   * of tries goes on with the next read.
   */
  async read(origin: string, now: number, ttlMs: number): Promise<SharedSiteFile | undefined> {
    let body: Buffer | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer in ${this.readTimeoutMs} ms`)), this.readTimeoutMs); });
      body = await Promise.race([this.store.get(siteFileKey(this.file, origin)), late]);
    } catch (err) {
      // The site is asked instead: one request, as before the shelf.
      log.debug({ event: 'site-file-shelf', file: this.file, origin, err }, 'kept site file could not be read');
      return undefined;
    } finally {
      clearTimeout(timer);
    }
    if (!body) return undefined;
    const kept = parse(body, KEPT_STATUS[this.file], SHARES_TROUBLE[this.file]);
    if (!kept) {
      log.warn({ event: 'site-file-shelf', file: this.file, origin, key: siteFileKey(this.file, origin) }, 'kept site file entry is not one we wrote: the site is asked instead');
      return undefined;
    }
    if (kept.fetchedAtMs + ttlMs <= now || kept.fetchedAtMs > now + MAX_FUTURE_MS) return undefined;
    return kept;
  }

  /**
   * Keeps the file in the background (see settled()). Never fails: a store that cannot take it
   * costs other workers one request each, as before.
   */
  write(origin: string, kept: SharedSiteFile): void {
    const write = this.store.put(siteFileKey(this.file, origin), JSON.stringify({ origin, ...kept }), 'application/json')
      .catch((err: unknown) => { log.debug({ event: 'site-file-shelf', file: this.file, origin, err }, 'site file could not be kept in the store'); })
      .finally(() => this.writes.delete(write));
    this.writes.add(write);
  }
}

export class RobotsShelf extends SiteFileShelf {
  constructor(store: ObjectStore, readTimeoutMs = SHELF_READ_TIMEOUT_MS) {
    super(store, 'robots.txt', readTimeoutMs);
  }
}

function parse(body: Buffer, keptStatus: (status: number) => boolean, sharesTrouble: boolean): SharedSiteFile | undefined {
  try {
    const v = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    const { fetchedAtMs, status, rules } = v;
    if (typeof fetchedAtMs !== 'number' || !Number.isFinite(fetchedAtMs) || typeof status !== 'number') return undefined;
    if (sharesTrouble && siteInTrouble(status)) {
      const u = v.unreadable as Record<string, unknown> | null | undefined;
      if (typeof u !== 'object' || u === null) return undefined;
      const { reason, tries, retryAtMs } = u;
      if (typeof reason !== 'string' || !Number.isSafeInteger(tries) || (tries as number) < 1 || typeof retryAtMs !== 'number' || !Number.isFinite(retryAtMs)) return undefined;
      return { fetchedAtMs, status, unreadable: { reason: reason.slice(0, MAX_REASON_CHARS), tries: tries as number, retryAtMs } };
    }
    if (!keptStatus(status)) return undefined;
    if (status >= 200 && status < 300) return typeof rules === 'string' ? { fetchedAtMs, status, rules } : undefined;
    return { fetchedAtMs, status };
  } catch {
    return undefined;
  }
}
