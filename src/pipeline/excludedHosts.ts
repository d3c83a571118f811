import net from 'node:net';

/**
 * Sites whose owners asked not to be crawled at all (by mail, not robots.txt, which a crawler
 * must ask for): `CRAWL_EXCLUDE_HOSTS`, comma- or space-separated domains, each excluding itself and
 * its subdomains, or IP addresses. Held by every worker given it, so no manifest, redirect or later
 * crawl reaches them: not even robots.txt is asked for, and no connection is opened.
 */
export class ExcludedHosts {
  private readonly names = new Set<string>();

  constructor(entries: readonly string[]) {
    for (const raw of entries) {
      const entry = raw.trim().toLowerCase().replace(/^\*\./, '').replace(/\.$/, '').replace(/^\[(.*)\]$/, '$1');
      if (!entry) continue;
      if (!net.isIP(entry) && !/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(entry)) {
        throw new Error(`CRAWL_EXCLUDE_HOSTS entry ${JSON.stringify(raw.trim())} is not a host name or IP address (give museum.org: it and its subdomains are excluded)`);
      }
      this.names.add(entry);
    }
  }

  /** The reason a URL's host (as in URL.hostname) is not asked for, if it is excluded. */
  reason(hostname: string): string | undefined {
    if (this.names.size === 0) return undefined;
    const host = hostname.toLowerCase().replace(/\.$/, '').replace(/^\[(.*)\]$/, '$1');
    if (net.isIP(host)) return this.names.has(host) ? excluded(host, host) : undefined;
    // museum.org excludes www.museum.org and img.cdn.museum.org: each suffix at a dot.
    for (let suffix = host; ;) {
      if (this.names.has(suffix)) return excluded(host, suffix);
      const dot = suffix.indexOf('.');
      if (dot < 0) return undefined;
      suffix = suffix.slice(dot + 1);
    }
  }
}

function excluded(host: string, entry: string): string {
  return `${host} is excluded by CRAWL_EXCLUDE_HOSTS (${entry}): not asked for`;
}

/** Whether a record's reason is an exclusion's (as `excluded` words it). */
export function isExclusionReason(reason: string): boolean {
  return / is excluded by CRAWL_EXCLUDE_HOSTS \(.*\): not asked for$/.test(reason);
}

/** CRAWL_EXCLUDE_HOSTS: comma- or whitespace-separated. */
export function excludedHostsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.CRAWL_EXCLUDE_HOSTS ?? '').split(/[,\s]+/).filter(Boolean);
}
