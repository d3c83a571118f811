import { log } from '../shared/log';
import { sourceSegment } from './keys';
import type { ObjectStore } from './store';

/**
 * robots.txt files kept in the store, so that the workers writing to it (and later runs over
 * it) ask the site for an origin's file once a day between them, not each worker process once:
 * with ten workers a site saw its robots.txt asked ten times, and a worker's first request
 * could come sooner than the file's Crawl-delay after another worker's image request. Only
 * answers that settle the rules are kept (a file, or a 4xx that means none); failures are each
 * worker's own to retry.
 */
export interface SharedRobots {
  /** When the file was fetched from the site (epoch ms): it is good for robotsTtlMs from then. */
  fetchedAtMs: number;
  status: number;
  /** The file's rules as parsed (its first 512 KiB) for a 2xx; absent for a 4xx (no rules). */
  rules?: string;
}

/** Kept beside the other work files, one small object per origin, all in one directory (a directory per origin cost the local store a mkdir each). */
export function robotsKey(origin: string): string {
  return `sites/robots.txt/${sourceSegment(origin)}.json`;
}

/** A fetchedAtMs this far ahead of our clock is a skewed or damaged entry, not a file to trust for a day. */
const MAX_FUTURE_MS = 5 * 60_000;

/**
 * How long a look in the store may take before the site is asked instead: the robots.txt request
 * waits for it, and an S3 store that hangs would otherwise hold a new origin for its 60 s
 * request timeout. A GET takes milliseconds when the store is well.
 */
export const SHELF_READ_TIMEOUT_MS = 2_000;

export class RobotsShelf {
  constructor(private readonly store: ObjectStore, private readonly readTimeoutMs = SHELF_READ_TIMEOUT_MS) {}

  /** The origin's kept file while it is younger than `ttlMs`, else undefined (also when the store cannot be read in time). */
  async read(origin: string, now: number, ttlMs: number): Promise<SharedRobots | undefined> {
    let body: Buffer | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer in ${this.readTimeoutMs} ms`)), this.readTimeoutMs); });
      body = await Promise.race([this.store.get(robotsKey(origin)), late]);
    } catch (err) {
      // The site is asked instead: one request, as before the shelf.
      log.debug({ event: 'robots-shelf', origin, err }, 'stored robots.txt could not be read');
      return undefined;
    } finally {
      clearTimeout(timer);
    }
    if (!body) return undefined;
    const kept = parse(body);
    if (!kept) {
      log.warn({ event: 'robots-shelf', origin, key: robotsKey(origin) }, 'stored robots.txt entry is not one we wrote: the site is asked instead');
      return undefined;
    }
    if (kept.fetchedAtMs + ttlMs <= now || kept.fetchedAtMs > now + MAX_FUTURE_MS) return undefined;
    return kept;
  }

  /** Never fails: a store that cannot take it costs other workers one request each, as before. */
  async write(origin: string, kept: SharedRobots): Promise<void> {
    try {
      await this.store.put(robotsKey(origin), JSON.stringify({ origin, ...kept }), 'application/json');
    } catch (err) {
      log.debug({ event: 'robots-shelf', origin, err }, 'robots.txt could not be kept in the store');
    }
  }
}

function parse(body: Buffer): SharedRobots | undefined {
  try {
    const v = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    const { fetchedAtMs, status, rules } = v;
    if (typeof fetchedAtMs !== 'number' || !Number.isFinite(fetchedAtMs) || typeof status !== 'number') return undefined;
    if (status >= 200 && status < 300) return typeof rules === 'string' ? { fetchedAtMs, status, rules } : undefined;
    // Only the 4xx answers that mean "no rules" are kept (see RobotsCache.load).
    if (status >= 400 && status < 500 && status !== 429 && status !== 408) return { fetchedAtMs, status };
    return undefined;
  } catch {
    return undefined;
  }
}
