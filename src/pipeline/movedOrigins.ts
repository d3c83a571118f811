import { setBounded } from '../shared/boundedMap';

/**
 * Origins that moved: every URL answers with a permanent redirect to the same path and query on
 * another origin (http to https, example.com to www.example.com, an old domain to a new one).
 * Old manifests are full of such links; each image cost two requests, the redirect and the
 * image, each in a slot of its own, so the site saw twice the requests and the source crawled at
 * half its rate. After MOVE_AFTER permanent redirects (301, 308) in a row from an origin to the
 * same path and query on one other origin, this worker asks that origin's other URLs there at
 * once, as a browser does for a site that sent HSTS; the new origin's robots.txt and the network
 * guard apply there as they did to each redirect's hop. One answer of another kind from the old
 * origin (an image, a 404, a redirect elsewhere) starts the count again. A move from https to
 * http is not learnt: each such URL follows its own redirect.
 */
export const MOVE_AFTER = 3;

/** Origins remembered at most: a worker crawls many sites, each learnt once. */
const MAX_ORIGINS = 10_000;

export class MovedOrigins {
  /** Old origin -> the origin its redirects pointed to, and how many in a row. */
  private readonly counting = new Map<string, { to: string; count: number }>();
  /** Old origin -> new origin, learnt. */
  private readonly moved = new Map<string, string>();

  /** The URL to ask: on the new origin when its own has been learnt to have moved there. */
  resolve(url: string): string {
    if (this.moved.size === 0) return url;
    try {
      const u = new URL(url);
      const to = this.moved.get(u.origin);
      return to ? `${to}${u.pathname}${u.search}` : url;
    } catch {
      return url;
    }
  }

  /** A URL's answer: `location` (absolute) when it redirected. */
  noteAnswer(url: string, status: number, location?: string): void {
    // Most answers are images with nothing counting: no URL to parse on the way.
    if (location === undefined && this.counting.size === 0) return;
    let from: URL;
    try {
      from = new URL(url);
    } catch {
      return;
    }
    if (this.moved.has(from.origin)) return;
    const to = location !== undefined && (status === 301 || status === 308) ? samePathElsewhere(from, location) : undefined;
    if (to === undefined) {
      this.counting.delete(from.origin);
      return;
    }
    const prev = this.counting.get(from.origin);
    const count = prev?.to === to ? prev.count + 1 : 1;
    if (count < MOVE_AFTER) {
      setBounded(this.counting, from.origin, { to, count }, MAX_ORIGINS);
      return;
    }
    this.counting.delete(from.origin);
    setBounded(this.moved, from.origin, to, MAX_ORIGINS);
  }
}

/** The other origin when `location` is `from`'s path and query there (and not a move from https to http). */
function samePathElsewhere(from: URL, location: string): string | undefined {
  try {
    const to = new URL(location);
    if (to.origin === from.origin || to.pathname !== from.pathname || to.search !== from.search) return undefined;
    if (to.protocol !== 'https:' && (to.protocol !== 'http:' || from.protocol !== 'http:')) return undefined;
    return to.origin;
  } catch {
    return undefined;
  }
}
