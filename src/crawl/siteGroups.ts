import { getPublicSuffix } from 'tough-cookie';

/** A site (registrable domain) whose hosts are sources of their own, each sending at its own rate. */
export interface SiteGroup {
  site: string;
  hosts: string[];
}

/** Groups named in the warning, and hosts named per group; the rest are counted. */
const SHOWN_GROUPS = 5;
const SHOWN_HOSTS = 4;

/**
 * Sources named after their host (no `source` given) whose hosts are one site by the
 * public-suffix list (tough-cookie's, as the chain cookies use): `img1.a.example`,
 * `img2.a.example` and `cdn.a.example` are three sources of `a.example`, and a site that serves
 * its images from shard hosts gets their rates added up. `x.github.io` and `y.github.io` are
 * two sites (the list's private part). A group that is only a host with and without `www.` is
 * left to the www warning; addresses have no site.
 */
export function siteGroups(hostSources: Iterable<string>, wwwTwins: readonly string[] = []): SiteGroup[] {
  const bySite = new Map<string, string[]>();
  for (const source of hostSources) {
    const host = source.replace(/:\d+$/, '');
    const site = getPublicSuffix(host, { ignoreError: true });
    if (!site) continue; // an IP address, localhost, or a name that is only a public suffix
    const hosts = bySite.get(site);
    if (hosts) hosts.push(source);
    else bySite.set(site, [source]);
  }
  const twins = new Set(wwwTwins);
  return [...bySite]
    .filter(([, hosts]) => hosts.length > 1 && !(hosts.length === 2 && hosts.some((h) => twins.has(h) && hosts.includes(`www.${h}`))))
    .map(([site, hosts]) => ({ site, hosts: hosts.sort() }))
    .sort((a, b) => b.hosts.length - a.hosts.length || a.site.localeCompare(b.site));
}

export function siteGroupsWarning(groups: readonly SiteGroup[]): string | undefined {
  if (groups.length === 0) return undefined;
  const shown = groups.slice(0, SHOWN_GROUPS).map((g) =>
    `${g.site} (${g.hosts.slice(0, SHOWN_HOSTS).join(', ')}${g.hosts.length > SHOWN_HOSTS ? `, and ${g.hosts.length - SHOWN_HOSTS} more` : ''})`).join('; ');
  const more = groups.length > SHOWN_GROUPS ? `; and ${groups.length - SHOWN_GROUPS} more sites` : '';
  const hosts = groups.reduce((n, g) => n + g.hosts.length, 0);
  return `${hosts} sources are hosts of ${groups.length === 1 ? 'one site' : `${groups.length} sites`}: ${shown}${more}; each sends at its own rate, ` +
    'so if a site\'s hosts share its servers, they get the sum: give a site\'s URLs one "source" to hold it to one rate';
}
