/**
 * Origins that send every http URL to the same URL over https. Old manifests are full of http://
 * links to sites that moved to https long ago; each such image cost two requests, the redirect
 * and the image, each in a slot of its own, so the site saw twice the requests and the source
 * crawled at half its rate. After UPGRADE_AFTER permanent redirects (301, 308) in a row from an
 * http origin to the same path and query on one https origin, this worker asks that origin's
 * other URLs over https at once, as a browser does for a site that sent HSTS. One answer of
 * another kind from the http origin (an image, a 404, a redirect elsewhere) starts the count again.
 */
export const UPGRADE_AFTER = 3;

/** Origins remembered at most: a worker crawls many sites, each learnt once. */
const MAX_ORIGINS = 10_000;

export class HttpsUpgrades {
  /** http origin -> the https origin its redirects pointed to, and how many in a row. */
  private readonly counting = new Map<string, { to: string; count: number }>();
  /** http origin -> https origin, learnt. */
  private readonly learnt = new Map<string, string>();

  /** The URL to ask: over https when its http origin has been learnt to move there. */
  upgrade(url: string): string {
    if (!url.startsWith('http:')) return url;
    try {
      const u = new URL(url);
      const to = this.learnt.get(u.origin);
      return to ? `${to}${u.pathname}${u.search}` : url;
    } catch {
      return url;
    }
  }

  /** Whether a URL was asked over https in place of http. */
  upgraded(url: string): boolean {
    return this.upgrade(url) !== url;
  }

  /** An http URL's answer: `location` when it redirected (absolute). */
  noteAnswer(url: string, status: number, location?: string): void {
    let from: URL;
    try {
      from = new URL(url);
    } catch {
      return;
    }
    if (from.protocol !== 'http:' || this.learnt.has(from.origin)) return;
    const to = location !== undefined && (status === 301 || status === 308) ? sameOverHttps(from, location) : undefined;
    if (to === undefined) {
      this.counting.delete(from.origin);
      return;
    }
    const prev = this.counting.get(from.origin);
    const count = prev?.to === to ? prev.count + 1 : 1;
    if (count < UPGRADE_AFTER) {
      remember(this.counting, from.origin, { to, count });
      return;
    }
    this.counting.delete(from.origin);
    remember(this.learnt, from.origin, to);
  }
}

/** The https origin when `location` is `from` itself over https (host, path and query alike). */
function sameOverHttps(from: URL, location: string): string | undefined {
  try {
    const to = new URL(location);
    if (to.protocol !== 'https:' || to.hostname !== from.hostname || to.pathname !== from.pathname || to.search !== from.search) return undefined;
    return to.origin;
  } catch {
    return undefined;
  }
}

/** Set, dropping the oldest entry once the map is full. */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  if (map.size >= MAX_ORIGINS) map.delete(map.keys().next().value!);
  map.set(key, value);
}
