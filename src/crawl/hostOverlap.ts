import { siteGroups, type SiteGroup } from './siteGroups';

/**
 * Hosts a manifest gives more than one rate: a host in two sources, a host and its `www.` name
 * as two sources, several hosts of one site as sources of their own. Each source keeps to its own
 * rate, so such a site gets the sum. Read URL by URL as a manifest is split (`crawl start`) or
 * checked (`crawl check`).
 */
export class HostOverlap {
  /** Hosts whose URLs are in more than one source, with those sources. */
  readonly sharedHosts = new Map<string, Set<string>>();
  /**
   * Host -> the named source its URLs are in. Only for sources with a name of their own: a
   * source without one is its host, so a manifest of millions of hosts costs nothing here.
   */
  private readonly namedHostSource = new Map<string, string>();
  /** Sources named in the manifest (not a URL's host): few, unlike hosts. */
  private readonly namedSources = new Set<string>();

  /** A URL kept (not a repeat) of `source` on `origin`; `known` says whether a source had a URL before this one. */
  add(source: string, origin: string, known: (source: string) => boolean): void {
    if (source !== origin) {
      this.namedSources.add(source);
      const owner = this.namedHostSource.get(origin);
      if (owner === undefined) this.namedHostSource.set(origin, source);
      else if (owner !== source) this.share(origin, owner, source);
      if (known(origin)) this.share(origin, origin, source);
    } else if (!known(source) && this.namedHostSource.has(origin)) {
      this.share(origin, this.namedHostSource.get(origin)!, source);
    }
  }

  /** The sites (origins) of every URL read, given the manifest's sources: a source without a name of its own is its origin. */
  *origins(sources: Iterable<string>): Iterable<string> {
    for (const source of sources) if (!this.namedSources.has(source)) yield source;
    yield* this.namedHostSource.keys();
  }

  /** Once every URL is read: host sources with and without `www.` (the bare names), and sites of several host sources. */
  finish(sources: ReadonlyMap<string, unknown>): { wwwTwins: string[]; siteGroups: SiteGroup[] } {
    const wwwTwins: string[] = [];
    for (const source of sources.keys()) {
      const bare = source.startsWith('www.') ? source.slice(4) : undefined;
      if (bare && sources.has(bare) && !this.namedSources.has(source) && !this.namedSources.has(bare)) wwwTwins.push(bare);
    }
    return { wwwTwins, siteGroups: siteGroups([...sources.keys()].filter((s) => !this.namedSources.has(s)), wwwTwins) };
  }

  private share(host: string, a: string, b: string): void {
    const set = this.sharedHosts.get(host) ?? new Set<string>();
    this.sharedHosts.set(host, set.add(a).add(b));
  }
}
