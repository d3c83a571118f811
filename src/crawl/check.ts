import { type Catalog, catalogEntryName } from './catalog';
import { HostOverlap } from './hostOverlap';
import { checkManifest, readManifest } from './manifest';
import type { SiteGroup } from './siteGroups';
import { targetRate } from '../politeness/targetRate';
import { SeenUrls } from '../shared/seenUrls';
import { textTable } from '../shared/textTable';
import { durationText } from '../workflows/timeLeft';

/**
 * `crawl check`: what a manifest and catalogue would crawl, read from the files alone (no server,
 * no store): each source's URLs, the rate it would be crawled at and where that rate comes from,
 * and how long that takes. A source of a million URLs without a catalogue entry is crawled at
 * 1/s, which is 11.6 days: better known before the crawl starts than from its progress bar.
 */
export interface SourcePlan {
  source: string;
  urls: number;
  rate: number;
  /** `rate` from the catalogue's rate, its imageCount, or neither (the 1/s default); capped by --max-rate. */
  rateFrom: 'rate' | 'imageCount' | 'default';
  capped: boolean;
  seconds: number;
}

export interface CrawlPlan {
  sources: SourcePlan[];
  badLines: number;
  duplicates: number;
  unusedCatalogEntries: string[];
  sharedHosts: Map<string, Set<string>>;
  wwwTwins: string[];
  siteGroups: SiteGroup[];
}

export async function planCrawl(opts: {
  manifest: string;
  catalog?: Catalog;
  maxRate?: number;
  onBadLine?: (bad: { line: number; error: string }) => void;
}): Promise<CrawlPlan> {
  await checkManifest(opts.manifest);
  const urls = new Map<string, number>();
  const seen = new SeenUrls();
  const hosts = new HostOverlap();
  let badLines = 0;
  let duplicates = 0;
  for await (const entry of readManifest(opts.manifest)) {
    if ('error' in entry) {
      badLines++;
      opts.onBadLine?.(entry);
    } else if (!seen.add(entry.url)) duplicates++;
    else {
      hosts.add(entry.source, entry.origin, (source) => urls.has(source));
      urls.set(entry.source, (urls.get(entry.source) ?? 0) + 1);
    }
  }
  const used = new Set<string>();
  const sources = [...urls].map(([source, n]): SourcePlan => {
    const name = opts.catalog && catalogEntryName(opts.catalog, source);
    if (name !== undefined) used.add(name);
    const config = (name !== undefined ? opts.catalog!.get(name) : undefined) ?? {};
    const uncapped = targetRate({ imageCount: config.imageCount, explicitRate: config.rate });
    const rate = targetRate({ imageCount: config.imageCount, explicitRate: config.rate, globalCeiling: opts.maxRate });
    return {
      source, urls: n, rate, capped: rate < uncapped, seconds: n / rate,
      rateFrom: config.rate !== undefined ? 'rate' : config.imageCount !== undefined ? 'imageCount' : 'default',
    };
  });
  // The longest first: they decide when the crawl ends.
  sources.sort((a, b) => b.seconds - a.seconds || a.source.localeCompare(b.source));
  const unusedCatalogEntries = opts.catalog ? [...opts.catalog.keys()].filter((n) => !used.has(n)) : [];
  return { sources, badLines, duplicates, unusedCatalogEntries, sharedHosts: hosts.sharedHosts, ...hosts.finish(urls) };
}

/** At most this many sources in the table; the rest are summed in its last line. */
const SHOWN = 50;

const RATE_FROM = { rate: 'catalogue rate', imageCount: 'catalogue imageCount', default: 'no catalogue entry: the default 1/s' } as const;

export function planText(plan: CrawlPlan): string {
  const rows = [['SOURCE', 'URLS', 'RATE/S', 'TAKES', 'RATE FROM']];
  for (const s of plan.sources.slice(0, SHOWN)) {
    rows.push([s.source, count(s.urls), rateText(s.rate), `~${durationText(s.seconds)}`, `${RATE_FROM[s.rateFrom]}${s.capped ? ', capped by --max-rate' : ''}`]);
  }
  const rest = plan.sources.slice(SHOWN);
  if (rest.length) rows.push([`(${rest.length} more)`, count(rest.reduce((n, s) => n + s.urls, 0)), '', '', '']);
  const total = plan.sources.reduce((n, s) => n + s.urls, 0);
  const longest = plan.sources[0];
  const lines = [textTable(rows)];
  if (longest) {
    lines.push(`${count(total)} URL(s) in ${count(plan.sources.length)} source(s), crawled side by side: ~${durationText(longest.seconds)} at these rates ` +
      `(the longest: ${longest.source}, ${count(longest.urls)} URLs at ${rateText(longest.rate)}/s), longer with retries and back-off, shorter by the URLs a store has downloaded before`);
  }
  const defaulted = plan.sources.filter((s) => s.rateFrom === 'default' && s.urls > 5_000);
  if (defaulted.length) {
    lines.push(`${defaulted.length} source(s) of more than 5,000 URLs have no catalogue entry and go at 1/s: give them a "rate" (what the site bears) or an "imageCount" (the rate grows with it) in a catalogue`);
  }
  return lines.join('\n');
}

function rateText(rate: number): string {
  return String(Math.round(rate * 1000) / 1000);
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}
