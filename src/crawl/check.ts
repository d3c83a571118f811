import { type Catalog, catalogEntryName } from './catalog';
import { listSourceIndex, readIndexFiles } from './priorWork';
import { downloadedIndexPrefix, readHostSources } from '../pipeline/downloadedIndex';
import { sourceSegment } from '../pipeline/keys';
import type { ObjectStore } from '../pipeline/store';
import { forEachLimit } from '../shared/concurrency';
import { HostOverlap } from './hostOverlap';
import type { GuardedHosts } from './guardedHosts';
import type { HostNames } from './hostLookup';
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
 * Given the store the crawl goes into, it also counts each source's URLs whose image is there
 * already (downloadedBefore), which a start leaves out, and times the rest.
 */
export interface SourcePlan {
  source: string;
  urls: number;
  rate: number;
  /** `rate` from the catalogue's rate, its imageCount, or neither (the 1/s default); capped by --max-rate. */
  rateFrom: 'rate' | 'imageCount' | 'default';
  capped: boolean;
  /** The time the URLs take at `rate` (those not downloaded before, when the store was read). */
  seconds: number;
  /** With a store: URLs whose image the source downloaded before into it (left out by a start). */
  downloadedBefore?: number;
}

export interface CrawlPlan {
  sources: SourcePlan[];
  badLines: number;
  duplicates: number;
  unusedCatalogEntries: string[];
  sharedHosts: Map<string, Set<string>>;
  wwwTwins: string[];
  siteGroups: SiteGroup[];
  /** With a store: its description. */
  store?: string;
}

export async function planCrawl(opts: {
  manifest: string;
  catalog?: Catalog;
  maxRate?: number;
  onBadLine?: (bad: { line: number; error: string }) => void;
  /** The store the crawl would go into: what it holds already is counted (see downloadedBefore). */
  store?: ObjectStore;
  /** Told of each URL kept (and of those a start leaves out as downloaded before), for the warning about URLs on addresses the guard refuses. */
  guardedHosts?: GuardedHosts;
  /** Told of each URL kept too, for `--resolve`'s look-ups of the host names. */
  hostNames?: HostNames;
}): Promise<CrawlPlan> {
  await checkManifest(opts.manifest);
  const urls = new Map<string, number>();
  const seen = new SeenUrls();
  const hosts = new HostOverlap();
  let badLines = 0;
  let duplicates = 0;
  /** With a store: the URLs' hosts, whose downloads under other source names count too. */
  const origins = new Set<string>();
  for await (const entry of readManifest(opts.manifest)) {
    if ('error' in entry) {
      badLines++;
      opts.onBadLine?.(entry);
    } else if (!seen.add(entry.url)) duplicates++;
    else {
      if (opts.store) origins.add(entry.origin);
      hosts.add(entry.source, entry.origin, (source) => urls.has(source));
      opts.guardedHosts?.add(entry.origin);
      opts.hostNames?.add(entry.origin, entry.source);
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
  if (opts.store) await countDownloadedBefore(opts.store, opts.manifest, sources, origins, opts.guardedHosts);
  // The longest first: they decide when the crawl ends.
  sources.sort((a, b) => b.seconds - a.seconds || a.source.localeCompare(b.source));
  const unusedCatalogEntries = opts.catalog ? [...opts.catalog.keys()].filter((n) => !used.has(n)) : [];
  return {
    sources, badLines, duplicates, unusedCatalogEntries, sharedHosts: hosts.sharedHosts, ...hosts.finish(urls),
    ...(opts.store ? { store: opts.store.description } : {}),
  };
}

/** Index files read at once: against S3 each is a round trip. */
const INDEX_READS = 16;

/**
 * Each source's URLs whose image was downloaded before into the store, as a start finds them:
 * in the source's index of downloads (downloadedIndex.ts: 8 bytes a URL), or in that of the
 * URL's host as a source of its own, or of another source named for URLs of that host. The
 * indexes are read first, then the manifest a second time, rather than holding its URLs. A start
 * also leaves out URLs queued in another manifest's unfinished chunks, not counted here.
 */
async function countDownloadedBefore(store: ObjectStore, manifest: string, sources: SourcePlan[], origins: ReadonlySet<string>, guardedHosts?: GuardedHosts): Promise<void> {
  const hostSources = await readHostSources(store);
  /** A URL of this host is looked for in these sources' indexes, by key segment. */
  const underHost = (origin: string): string[] => {
    const host = sourceSegment(origin);
    return [host, ...(hostSources.get(host) ?? [])];
  };
  const segments = new Set(sources.map((s) => sourceSegment(s.source)));
  for (const origin of origins) for (const segment of underHost(origin)) segments.add(segment);
  const indexes = new Map<string, SeenUrls>();
  await forEachLimit([...segments], INDEX_READS, async (segment) => {
    const names = await listSourceIndex(store, segment);
    // A damaged index file is passed over, as a start passes it over (its URLs are crawled again).
    if (names.length > 0) indexes.set(segment, (await readIndexFiles(store, downloadedIndexPrefix(segment), names)).downloaded);
  });
  for (const s of sources) s.downloadedBefore = 0;
  if (indexes.size > 0) {
    const bySource = new Map(sources.map((s) => [s.source, s]));
    const lookIn = new Map<string, SeenUrls[]>();
    const seen = new SeenUrls();
    for await (const entry of readManifest(manifest)) {
      if ('error' in entry || !seen.add(entry.url)) continue;
      const key = `${entry.source}\n${entry.origin}`;
      let where = lookIn.get(key);
      if (!where) {
        where = [...new Set([sourceSegment(entry.source), ...underHost(entry.origin)])].flatMap((seg) => indexes.get(seg) ?? []);
        lookIn.set(key, where);
      }
      const plan = bySource.get(entry.source);
      // A source not in the first pass: the manifest changed between the two.
      if (plan && where.some((index) => index.has(entry.url))) {
        plan.downloadedBefore! += 1;
        guardedHosts?.forget(entry.origin);
      }
    }
  }
  for (const s of sources) s.seconds = Math.max(0, s.urls - s.downloadedBefore!) / s.rate;
}

/** At most this many sources in the table; the rest are summed in its last line. */
const SHOWN = 50;

const RATE_FROM = { rate: 'catalogue rate', imageCount: 'catalogue imageCount', default: 'no catalogue entry: the default 1/s' } as const;

export function planText(plan: CrawlPlan): string {
  const read = plan.store !== undefined;
  const rows = [['SOURCE', 'URLS', ...(read ? ['DOWNLOADED'] : []), 'RATE/S', 'TAKES', 'RATE FROM']];
  for (const s of plan.sources.slice(0, SHOWN)) {
    rows.push([s.source, count(s.urls), ...(read ? [count(s.downloadedBefore ?? 0)] : []), rateText(s.rate), `~${durationText(s.seconds)}`, `${RATE_FROM[s.rateFrom]}${s.capped ? ', capped by --max-rate' : ''}`]);
  }
  const rest = plan.sources.slice(SHOWN);
  const sum = (list: SourcePlan[], of: (s: SourcePlan) => number) => list.reduce((n, s) => n + of(s), 0);
  if (rest.length) rows.push([`(${rest.length} more)`, count(sum(rest, (s) => s.urls)), ...(read ? [count(sum(rest, (s) => s.downloadedBefore ?? 0))] : []), '', '', '']);
  const total = sum(plan.sources, (s) => s.urls);
  const longest = plan.sources[0];
  const lines = [textTable(rows)];
  if (longest) {
    const left = longest.urls - (longest.downloadedBefore ?? 0);
    const before = sum(plan.sources, (s) => s.downloadedBefore ?? 0);
    const stored = read
      ? `; ${count(before)} of them downloaded before into the ${plan.store}, which a start leaves out`
      : ', shorter by the URLs a store has downloaded before (give --data-dir or --out to count them)';
    lines.push(`${count(total)} URL(s) in ${count(plan.sources.length)} source(s), crawled side by side: ~${durationText(longest.seconds)} at these rates ` +
      `(the longest: ${longest.source}, ${count(left)} URL${left === 1 ? '' : 's'}${read ? ' to fetch' : ''} at ${rateText(longest.rate)}/s), longer with retries and back-off${stored}`);
  }
  const defaulted = plan.sources.filter((s) => s.rateFrom === 'default' && s.urls > 5_000);
  if (defaulted.length) {
    lines.push(`${defaulted.length} source(s) of more than 5,000 URLs have no catalogue entry and go at 1/s: give them a "rate" (what the site bears) or an "imageCount" (the rate grows with it) in a catalogue`);
  }
  return lines.join('\n');
}

/** A rate to three decimals, or to three figures below that: a catalogue's 0.0001/s read as 0/s. */
function rateText(rate: number): string {
  return String(Math.round(rate * 1000) / 1000 || Number(rate.toPrecision(3)));
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}
