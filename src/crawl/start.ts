import { decimal } from '../shared/decimal';
import path from 'node:path';
import { DEFAULT_ADAPTIVE, invalidRetryAfterCap } from '../politeness/adaptiveRate';
import type { Client } from '@temporalio/client';
import { sourceSegment } from '../pipeline/keys';
import { invalidRate } from '../politeness/targetRate';
import type { ObjectStore } from '../pipeline/store';
import { forEachLimit, WeightedBudget } from '../shared/concurrency';
import type { StartProgress } from './startProgress';
import { appendRange, chunkDoneKey, chunkSpoolKey } from '../shared/chunkRanges';
import type { ChunkRange, SourceConfig } from '../shared/types';
import { addWorkSignal, type AddWorkOptions } from '../workflows/messages';
import { crawlMonitorWorkflow } from '../workflows/monitor';
import { PATCH_LEVEL } from '../workflows/patchLevel';
import { MonitorModel, monitorWorkflowId, shownOf, type MonitorInput, type MonitorOptions } from '../workflows/monitorState';
import { monitorSearchAttributes } from '../temporal/searchAttributes';
import { type Catalog, catalogEntryName } from './catalog';
import { checkManifest, readManifest } from './manifest';
import { identifyManifest, type ManifestIdentity } from './manifestPortions';
import { listSourceIndex, loadHostDownloads, loadPriorWork, sharesUrls, useHostDownloads, type HostDownloads, type PriorWork } from './priorWork';
import { chunkQueuedKey, hostSourceKey, readHostSources } from '../pipeline/downloadedIndex';
import { SeenUrls } from '../shared/seenUrls';
import { HostOverlap } from './hostOverlap';
import type { GuardedHosts } from './guardedHosts';
import { siteGroupsWarning, type SiteGroup } from './siteGroups';

/**
 * Splits a manifest per source into chunk files in the store and hands each monitor only
 * ranges of chunk numbers (signal-with-start), so URL lists never enter workflow history and a
 * source's share of the monitor's state does not grow with its size.
 * Chunk ids derive from the manifest's content, and a finished chunk leaves a done-marker:
 * starting the same manifest twice crawls nothing twice.
 */

export const CHUNK_SIZE = 500;
/** A monitor hears of new chunks this often while a large manifest is still being split. */
const CHUNKS_PER_SIGNAL = 200;

export interface BadLine {
  line: number;
  error: string;
}

export interface StartSummary {
  manifestId: string;
  /** The earlier manifest this one begins with: its lines are split as they were then. */
  continues?: ManifestIdentity['continues'];
  sources: Map<string, SourceSummary>;
  badLines: number;
  /**
   * The file had grown by the time its lines were read (it is still being written): only the
   * lines it had when first read were started, as this manifest.
   */
  grew?: { lines: number };
  /** Lines whose URL an earlier line had listed already: each URL is crawled once. */
  duplicates: number;
  /** URLs left out because their source downloaded them under another manifest (see PriorWork). */
  downloadedBefore: number;
  /** Of those, URLs downloaded under another source name (see loadHostDownloads). */
  downloadedUnderOtherSource: number;
  /** URLs left out because another manifest's unfinished chunks hold them (see PriorWork). */
  queuedElsewhere: number;
  /** Catalogue entries no source of the manifest is called by: most likely a misspelt name. */
  unusedCatalogEntries: string[];
  /** Hosts whose URLs are in more than one source: each source sends at its own rate. */
  sharedHosts: Map<string, Set<string>>;
  /** Hosts whose URLs are sources of their own both with and without `www.` (the bare names). */
  wwwTwins: string[];
  /** Other hosts that are sources of their own and one site by the public-suffix list. */
  siteGroups: SiteGroup[];
}

export interface SourceSummary {
  urls: number;
  chunks: number;
  alreadyDone: number;
  downloadedBefore: number;
  queuedElsewhere: number;
  /** Unfinished chunks of other manifests holding URLs of this one, added to the source's monitor. */
  chunksOfOthers: number;
}

/**
 * A manifest that gave no URL at all: an error when it had lines but every one was bad (almost
 * surely the wrong file or format, not a finished crawl), a note when it was empty.
 */
export function emptyManifest(sources: number, badLines: number, manifest: string): { error: string } | { note: string } | undefined {
  if (sources > 0) return undefined;
  if (badLines > 0) return { error: `${manifest} has no URL that can be crawled: all ${badLines} line(s) with content are bad (see above)` };
  return { note: nothingToCrawl(manifest) };
}

export function nothingToCrawl(manifest: string): string {
  return `nothing to crawl: ${manifest} lists no URLs`;
}

/**
 * Said when the manifest continues an earlier one: its first lines are not crawled again, which
 * an operator who appended lines expects, and one who edited an old file may not.
 */
export function continuesNote(summary: StartSummary, manifest: string): string | undefined {
  const c = summary.continues;
  if (!c) return undefined;
  const earlier = c.path === path.resolve(manifest) ? 'were started before' : `are the manifest ${c.path}, started before`;
  return `the first ${c.lines} line(s) of ${manifest} ${earlier}: they keep the chunks and progress they had then ` +
    '(nothing is crawled twice), and only the lines after them are new';
}

/** How many lines repeated a URL listed before, or undefined when none did. */
export function duplicatesNote(summary: Pick<StartSummary, 'duplicates'>): string | undefined {
  return summary.duplicates ? `${summary.duplicates} repeated URL(s) left out: each URL is crawled once` : undefined;
}

/** How many URLs were left out as downloaded under another manifest, or undefined when none were. */
export function downloadedBeforeNote(summary: StartSummary): string | undefined {
  const n = summary.downloadedBefore;
  if (!n) return undefined;
  const other = summary.downloadedUnderOtherSource;
  const renamed = other ? ` (${other} of them under another source name: a line without a "source" is under its URL's host)` : '';
  return `${n} URL(s) left out: their sources downloaded them under another manifest started into this store${renamed} ` +
    '(their records stand: `crawl export`); each image is downloaded once';
}

/** Said when the file grew while it was being started: the lines added were not read. */
export function grewNote(summary: StartSummary, manifest: string): string | undefined {
  if (!summary.grew) return undefined;
  return `${manifest} grew while it was being started (is something still writing it?): its first ${summary.grew.lines} line(s), ` +
    'as it was when first read, are started; start it again once it is complete, and only the lines added since are crawled';
}

/** How many URLs were left out as queued under another manifest, or undefined when none were. */
export function queuedElsewhereNote(summary: StartSummary): string | undefined {
  const n = summary.queuedElsewhere;
  if (!n) return undefined;
  const chunks = [...summary.sources.values()].reduce((sum, s) => sum + s.chunksOfOthers, 0);
  // "Not yet crawled" was wrong for URLs an unfinished chunk had already recorded, and for a
  // manifest started again after those chunks finished (the left-out URLs are kept as they were).
  const start = `${n} URL(s) left out: chunks of another manifest started into this store hold them, unfinished when this one was first started; they are crawled once, under it`;
  return chunks === 0 ? `${start} (those chunks have finished since)`
    : `${start} (the ${chunks} chunk(s) holding them go to their sources' monitors too, in case that crawl was stopped before it came to them)`;
}

/** A warning naming catalogue entries that matched no source, or undefined when all matched. */
export function unusedCatalogWarning(summary: Pick<StartSummary, 'unusedCatalogEntries'>): string | undefined {
  const names = summary.unusedCatalogEntries;
  if (names.length === 0) return undefined;
  const shown = names.slice(0, 5).map((n) => JSON.stringify(n)).join(', ');
  const more = names.length > 5 ? ` and ${names.length - 5} more` : '';
  const one = names.length === 1;
  return `catalog ${one ? 'entry' : 'entries'} ${shown}${more} match${one ? 'es' : ''} no source in the manifest, so ${one ? 'its' : 'their'} ` +
    'settings are not used (a source is the line\'s "source", else the URL\'s host, with :port if it has one)';
}

/**
 * A warning naming hosts listed under more than one source, or undefined when there are none.
 * A source's rate is per source: a host in two sources gets both rates at once, more than the
 * site was meant to bear.
 */
export function sharedHostsWarning(summary: Pick<StartSummary, 'sharedHosts'>): string | undefined {
  const shared = [...summary.sharedHosts];
  if (shared.length === 0) return undefined;
  const shown = shared.slice(0, 5).map(([host, sources]) => `${host} (in ${[...sources].slice(0, 4).map((n) => JSON.stringify(n)).join(', ')}${sources.size > 4 ? ', ...' : ''})`).join('; ');
  const more = shared.length > 5 ? `; and ${shared.length - 5} more` : '';
  return `${shared.length === 1 ? 'a host is' : `${shared.length} hosts are`} in more than one source: ${shown}${more}. ` +
    'Each source keeps to its own rate, so such a host gets the sum; give all of a host\'s URLs one source to hold it to one rate';
}

/**
 * A warning naming hosts crawled as two sources, with and without `www.`, or undefined. Most
 * sites serve both names from the same servers, which would get both sources' rates at once.
 */
export function wwwTwinsWarning(summary: Pick<StartSummary, 'wwwTwins'>): string | undefined {
  const twins = summary.wwwTwins;
  if (twins.length === 0) return undefined;
  const shown = twins.slice(0, 5).map((h) => `${h} and www.${h}`).join('; ');
  const more = twins.length > 5 ? `; and ${twins.length - 5} more pairs` : '';
  return `${shown}${more} ${twins.length === 1 ? 'are two sources' : 'are pairs of sources'}, each sending at its own rate; ` +
    'if a pair is one site, its servers get the sum: give both names\' URLs one "source" to hold the site to one rate';
}

/** What `start`, `run` and `check` warn of after reading a manifest, one line each. */
export function startWarnings(summary: Pick<StartSummary, 'unusedCatalogEntries' | 'sharedHosts' | 'wwwTwins' | 'siteGroups'>): string[] {
  return [unusedCatalogWarning(summary), sharedHostsWarning(summary), wwwTwinsWarning(summary), siteGroupsWarning(summary.siteGroups)].filter((w): w is string => w !== undefined);
}

/** The global ceiling: `--max-rate` when given, else CRAWL_MAX_RATE, else none. */
export function maxRateSetting(flag: number | undefined, env: NodeJS.ProcessEnv = process.env): number | undefined {
  if (flag !== undefined) return flag;
  const raw = env.CRAWL_MAX_RATE;
  if (raw === undefined || raw.trim() === '') return undefined;
  const bad = invalidRate(decimal(raw));
  if (bad) throw new Error(`CRAWL_MAX_RATE: ${bad}, got ${JSON.stringify(raw)}`);
  return decimal(raw);
}

/**
 * The longest Retry-After the monitors of the manifest's sources honour (ms): `--max-retry-after`
 * seconds when given, else CRAWL_MAX_RETRY_AFTER_S, else undefined (the default, 15 min).
 */
export function maxRetryAfterSetting(flag: number | undefined, env: NodeJS.ProcessEnv = process.env): number | undefined {
  if (flag !== undefined) return flag * 1000;
  const raw = env.CRAWL_MAX_RETRY_AFTER_S;
  if (raw === undefined || raw.trim() === '') return undefined;
  const bad = invalidRetryAfterCap(decimal(raw));
  if (bad) throw new Error(`CRAWL_MAX_RETRY_AFTER_S: ${bad}, got ${JSON.stringify(raw)}`);
  return decimal(raw) * 1000;
}

export interface StartOptions {
  client: Client;
  store: ObjectStore;
  manifest: string;
  catalog?: Catalog;
  taskQueue: string;
  chunkSize?: number;
  monitorOptions?: Partial<MonitorOptions>;
  /**
   * The global ceiling (requests/s) for the monitors this start creates: no rate from the
   * catalogue, the source's size, `set-rate` or `resume --rate` goes above it.
   */
  maxRate?: number;
  /** The longest Retry-After (ms) the monitors this start creates honour; their default is 15 min. */
  maxRetryAfterMs?: number;
  onBadLine?: (bad: BadLine) => void;
  /** Called every 50,000 manifest lines read, then as each source's monitor has been started or given its work. */
  onProgress?: (progress: StartProgress) => void;
  /**
   * Stops reading the manifest (Ctrl-C): the chunks already written are still announced, the
   * chunk being filled is left out. Chunks derive from the manifest's content, so starting the
   * same manifest again adds exactly what is missing.
   */
  signal?: AbortSignal;
  /** Told of each URL kept, for the warning about URLs on addresses the guard refuses. */
  guardedHosts?: GuardedHosts;
  /** Told every site (origin) of the manifest once it is read, before any monitor starts; throwing stops the start there. */
  beforeMonitors?: (origins: Iterable<string>) => void | Promise<void>;
}

function chunkDir(manifestId: string, source: string): string {
  return `work/${manifestId}/${sourceSegment(source)}/`;
}

function chunkPrefix(manifestId: string, source: string): string {
  return `${chunkDir(manifestId, source)}chunk-`;
}

export function chunkKeys(manifestId: string, source: string, n: number): { urls: string; done: string } {
  const urls = chunkSpoolKey(chunkPrefix(manifestId, source), n);
  return { urls, done: chunkDoneKey(urls) };
}

/** Manifest lines between two progress calls while reading. */
const PROGRESS_LINES = 50_000;

/** Sources whose last chunk and monitor start are in flight at once. */
const START_CONCURRENCY = 16;
/**
 * Chunk files checked and written at once, and queued at most: against S3 each chunk is two
 * round trips, and one after the other a manifest of 10 million URLs took minutes to split.
 */
const WRITE_CONCURRENCY = 16;
const MAX_QUEUED_WRITES = 64;
/** Sources whose prior work (see PriorWork) is read at once. */
const PRIOR_READ_CONCURRENCY = 32;
/** URLs held while their sources' prior work is read, at most: beyond, the manifest waits. */
const MAX_HELD_URLS = 10_000;

/** A source's prior work being read, and once read, what it is (or why it could not be read). */
interface PriorEntry {
  promise: Promise<PriorWork>;
  value?: PriorWork;
  error?: unknown;
}

/** What a source leaves out of a host's downloads (see useHostDownloads), being read, and once read. */
interface UnderEntry {
  promise: Promise<SeenUrls | undefined>;
  value?: { downloaded?: SeenUrls };
  error?: unknown;
}

/** A source's URLs held in manifest order until what they are checked against has arrived. */
interface HeldUrls {
  urls: { url: string; under: UnderEntry | undefined }[];
  /** What they wait for, and how much of it has not arrived yet. */
  waitingFor: Set<PriorEntry | UnderEntry>;
  pending: number;
}

interface ChunkWritten {
  /** The manifest portion's id (see manifestPortions). */
  portion: string;
  n: number;
  count: number;
  /** The chunk had a done-marker already: nothing was written and it is not crawled. */
  done: boolean;
}

export async function startCrawl(opts: StartOptions): Promise<StartSummary> {
  await checkManifest(opts.manifest);
  const identity = await identifyManifest(opts.manifest, opts.store);
  const { id, portions } = identity;
  let portionIndex = 0;
  let portion = portions[0]!;
  /** Per source: chunks of the current portion so far. */
  let portionChunks = new Map<string, number>();
  const chunkSize = opts.chunkSize ?? CHUNK_SIZE;
  const buffers = new Map<string, string[]>();
  /** Per source: ranges not yet sent to its monitor. */
  const refs = new Map<string, ChunkRange[]>();
  const summary: StartSummary = { manifestId: id, ...(identity.continues ? { continues: identity.continues } : {}), sources: new Map(), badLines: 0, duplicates: 0, downloadedBefore: 0, downloadedUnderOtherSource: 0, queuedElsewhere: 0, unusedCatalogEntries: [], sharedHosts: new Map(), wwwTwins: [], siteGroups: [] };
  const hosts = new HostOverlap();
  const seen = new SeenUrls();
  const writeSlots = new WeightedBudget(WRITE_CONCURRENCY);
  /** Per source, in chunk order: writes not yet turned into ranges. */
  const writing = new Map<string, Promise<ChunkWritten>[]>();
  /** All writes in the order queued, to bound how many URL lists wait in memory. */
  const queued: Promise<ChunkWritten>[] = [];

  /**
   * Per portion and source, what the store holds already (see PriorWork): the chunks done (a
   * re-run), from one listing of its done-markers (a look-up per chunk was a million requests to
   * S3 for a source of 500 million URLs), and the URLs other manifests downloaded.
   */
  const priors = new Map<string, Map<string, PriorEntry>>();
  // A manifest of a million small sources would otherwise have thousands of listings in flight.
  const priorReads = new WeightedBudget(PRIOR_READ_CONCURRENCY);
  const ownPortions = new Set(portions.map((p) => p.id));
  /** Per source: its URLs that other manifests' unfinished chunks hold (see PriorWork.queued). */
  const queuedShared = new Map<string, SeenUrls>();
  const priorOf = (portionId: string, source: string): PriorEntry => {
    let bySource = priors.get(portionId);
    if (!bySource) priors.set(portionId, bySource = new Map());
    let p = bySource.get(source);
    if (!p) {
      const entry: PriorEntry = {
        promise: priorReads.use(1, () => loadPriorWork(opts.store, chunkDir(portionId, source), chunkPrefix(portionId, source), source, ownPortions)),
      };
      entry.promise.then((v) => { entry.value = v; }, (err: unknown) => { entry.error = err; });
      bySource.set(source, p = entry);
    }
    return p;
  };

  /** Host segment -> named sources with URLs of it, as this start found them (see hostSourceKey). */
  const hostSources = await readHostSources(opts.store);
  /** Host and source pairs this start has marked (see hostSourceKey), and all its marker writes. */
  const marked = new Set<string>();
  let marking: Promise<unknown> = Promise.resolve();
  const markHostSource = (home: string, source: string) => {
    const pair = `${home}\n${source}`;
    if (marked.has(pair)) return;
    marked.add(pair);
    const write = writeSlots.use(1, () => opts.store.put(hostSourceKey(sourceSegment(home), sourceSegment(source)), '', 'text/plain'));
    marking = Promise.all([marking, write]);
    // Awaited by the next signal; until then a failure must not count as unhandled.
    marking.catch(() => undefined);
  };
  /** Sources' index files as this start found them, each listed once (see loadHostDownloads). */
  const indexLists = new Map<string, Promise<string[]>>();
  const listIndex = (segment: string): Promise<string[]> => {
    let p = indexLists.get(segment);
    if (!p) indexLists.set(segment, p = listSourceIndex(opts.store, segment));
    return p;
  };
  /** Per portion and host: what the sources that may hold its URLs downloaded of them. */
  const hostDownloads = new Map<string, Promise<HostDownloads | undefined>>();
  /**
   * Per portion, source and URL host: what the source leaves out of those downloads; null when a
   * URL of that host is checked against nothing more (decided once, not per URL).
   */
  const undersByKey = new Map<string, UnderEntry | null>();
  /**
   * What a URL of `home` under `source` is checked against besides its source's own index, or
   * undefined when nothing: the downloads of the host as a source of its own and of the named
   * sources that have URLs of it.
   */
  const underOf = (portionId: string, source: string, home: string): UnderEntry | undefined => {
    if (source === home && hostSources.size === 0) return undefined;
    const key = `${portionId}\n${source}\n${home}`;
    const known = undersByKey.get(key);
    if (known !== undefined) return known ?? undefined;
    const host = sourceSegment(home);
    const sources = new Set(hostSources.get(host) ?? []).add(host);
    // The source alone: its own index is left out already.
    if (sources.size === 1 && sources.has(sourceSegment(source))) {
      undersByKey.set(key, null);
      return undefined;
    }
    const load = () => {
      const at = `${portionId}\n${host}`;
      let p = hostDownloads.get(at);
      if (!p) hostDownloads.set(at, p = priorReads.use(1, () => loadHostDownloads(opts.store, `work/${portionId}/`, host, sources, listIndex)));
      return p;
    };
    const entry: UnderEntry = {
      promise: (async () => useHostDownloads(opts.store, chunkDir(portionId, source), source, host, await priorOf(portionId, source).promise, load))(),
    };
    entry.promise.then((downloaded) => { entry.value = { downloaded }; }, (err: unknown) => { entry.error = err; });
    undersByKey.set(key, entry);
    return entry;
  };

  const governorConfig = opts.maxRate !== undefined || opts.maxRetryAfterMs !== undefined ? {
    governorConfig: {
      ...(opts.maxRate !== undefined ? { globalCeiling: opts.maxRate } : {}),
      ...(opts.maxRetryAfterMs !== undefined ? { adaptive: { ...DEFAULT_ADAPTIVE, maxRetryAfterMs: opts.maxRetryAfterMs } } : {}),
    },
  } : {};
  const send = async (source: string) => {
    const list = refs.get(source) ?? [];
    if (list.length === 0) return;
    refs.delete(source);
    // Before any of its URLs is crawled, so that a later manifest listing them under their host finds them.
    await marking;
    const entry = opts.catalog && catalogEntryName(opts.catalog, source);
    const config: SourceConfig = (entry !== undefined ? opts.catalog!.get(entry) : undefined) ?? {};
    const input: MonitorInput = {
      source, config, options: { taskQueue: opts.taskQueue, ...(opts.monitorOptions ?? {}) },
      ...governorConfig,
      // Ignored by a monitor already running: it keeps the level it was started with.
      patchLevel: PATCH_LEVEL,
    };
    // A monitor already running ignores its start input: the entry, the ceiling and the
    // Retry-After cap come with the work, and the monitor takes each that has changed.
    const given: AddWorkOptions = {
      ...(entry !== undefined ? { catalog: config } : {}), ...(opts.maxRate !== undefined ? { maxRate: opts.maxRate } : {}),
      ...(opts.maxRetryAfterMs !== undefined ? { maxRetryAfterMs: opts.maxRetryAfterMs } : {}),
    };
    await opts.client.workflow.signalWithStart(crawlMonitorWorkflow, {
      workflowId: monitorWorkflowId(source),
      taskQueue: opts.taskQueue,
      args: [input],
      // What the new monitor would show at once: listed from its start, and it need not upsert them.
      typedSearchAttributes: monitorSearchAttributes(shownOf(MonitorModel.fromInput(input, Date.now()))),
      signal: addWorkSignal,
      signalArgs: Object.keys(given).length ? [list, given] : [list],
    });
  };

  /** Turns the source's finished writes into ranges, in chunk order (a monitor only hears of written chunks). */
  const settle = async (source: string) => {
    const jobs = writing.get(source) ?? [];
    writing.delete(source);
    const s = summary.sources.get(source)!;
    for (const job of jobs) {
      const { portion: at, n, count, done } = await job;
      if (done) {
        // Skipped: the next chunk is not adjacent to the range before, so it starts a new one.
        s.alreadyDone += count;
        continue;
      }
      const pending = refs.get(source) ?? [];
      refs.set(source, pending);
      appendRange(pending, { idPrefix: `${at}-`, spoolPrefix: chunkPrefix(at, source), first: n, last: n, chunkSize, lastCount: count });
    }
  };

  const flush = async (source: string) => {
    const urls = buffers.get(source) ?? [];
    if (urls.length === 0) return;
    buffers.set(source, []);
    summary.sources.get(source)!.chunks++;
    const n = portionChunks.get(source) ?? 0;
    portionChunks.set(source, n + 1);
    const at = portion.id;
    const keys = chunkKeys(at, source, n);
    const prior = priorOf(at, source).promise;
    const job = writeSlots.use(1, async (): Promise<ChunkWritten> => {
      if ((await prior).done.has(n)) {
        // Crawled by an earlier start: none of them is asked for, by a worker's guard or otherwise.
        if (opts.guardedHosts) for (const url of urls) opts.guardedHosts.forgetUrl(url);
        return { portion: at, n, count: urls.length, done: true };
      }
      await Promise.all([
        opts.store.put(keys.urls, urls.join('\n') + '\n', 'text/plain'),
        // Tells a manifest started while this chunk waits to leave its URLs to it.
        opts.store.put(chunkQueuedKey(keys.urls)!, '', 'text/plain'),
      ]);
      return { portion: at, n, count: urls.length, done: false };
    });
    // Awaited below or in settle(); until then a failure must not count as unhandled.
    job.catch(() => undefined);
    const jobs = writing.get(source) ?? [];
    writing.set(source, jobs);
    jobs.push(job);
    queued.push(job);
    while (queued.length > MAX_QUEUED_WRITES) await queued.shift();
    if (jobs.length >= CHUNKS_PER_SIGNAL) {
      await settle(source);
      await send(source);
    }
  };

  /**
   * URLs of sources whose prior work (what to leave out) is still being read, in manifest order:
   * the manifest goes on streaming meanwhile, as a million new sources cannot each wait for a
   * listing in turn.
   */
  const held = new Map<string, HeldUrls>();
  let heldUrls = 0;
  /** Held sources whose prior work has arrived. */
  const ready: string[] = [];
  /** Whether `url` goes into its source's chunk, or is counted as downloaded before. */
  const keep = (source: string, url: string, prior: PriorWork, under: SeenUrls | undefined): boolean => {
    const own = prior.downloaded?.has(url) ?? false;
    if (own || under?.has(url)) {
      summary.sources.get(source)!.downloadedBefore++;
      summary.downloadedBefore++;
      if (!own) summary.downloadedUnderOtherSource++;
      // Asked for by no one: a warning that it would be refused misled a run of a crawl done before.
      opts.guardedHosts?.forgetUrl(url);
      return false;
    }
    if (prior.queued?.urls.has(url)) {
      summary.sources.get(source)!.queuedElsewhere++;
      summary.queuedElsewhere++;
      let shared = queuedShared.get(source);
      if (!shared) queuedShared.set(source, shared = new SeenUrls());
      shared.add(url);
      return false;
    }
    return true;
  };
  /**
   * Adds the unfinished chunks of other manifests that hold URLs this one left out to the
   * source's next signal: a monitor that has them ignores them, and one whose crawl was stopped
   * crawls them now (skipping what they recorded) instead of never.
   */
  const addChunksOfOthers = (source: string) => {
    const shared = queuedShared.get(source);
    if (!shared) return;
    const added = new Set<string>();
    for (const bySource of priors.values()) {
      for (const c of bySource.get(source)?.value?.queued?.chunks ?? []) {
        if (!c.undone || added.has(c.marker) || !sharesUrls(c, shared)) continue;
        added.add(c.marker);
        const pending = refs.get(source) ?? [];
        refs.set(source, pending);
        appendRange(pending, { idPrefix: `${c.portion}-`, spoolPrefix: chunkPrefix(c.portion, source), first: c.n, last: c.n, chunkSize: c.count, lastCount: c.count });
      }
    }
    summary.sources.get(source)!.chunksOfOthers = added.size;
  };
  /** Adds `url` to its source's next chunk; true when that chunk is full. */
  const buffer = (source: string, url: string): boolean => {
    let buf = buffers.get(source);
    if (!buf) buffers.set(source, buf = []);
    buf.push(url);
    return buf.length >= chunkSize;
  };
  const take = async (source: string, url: string, prior: PriorWork, under: SeenUrls | undefined) => {
    if (keep(source, url, prior, under) && buffer(source, url)) await flush(source);
  };
  /**
   * Takes the URL at once when what its source leaves out is known (true when its chunk is full);
   * holds it otherwise, with the source's later URLs, in manifest order.
   */
  const admit = (source: string, url: string, home: string): boolean => {
    const prior = priorOf(portion.id, source);
    const under = underOf(portion.id, source, home);
    if (prior.value && (!under || under.value) && !held.has(source)) return keep(source, url, prior.value, under?.value?.downloaded) && buffer(source, url);
    if (prior.error) throw prior.error;
    if (under?.error) throw under.error;
    let h = held.get(source);
    if (!h) held.set(source, h = { urls: [], waitingFor: new Set(), pending: 0 });
    const hold = h;
    for (const entry of [prior, under]) {
      if (!entry || entry.value || hold.waitingFor.has(entry)) continue;
      hold.waitingFor.add(entry);
      hold.pending++;
      // Ready once everything its URLs wait for has arrived, so that releasing it never waits.
      const arrived = () => { if (--hold.pending === 0) ready.push(source); };
      entry.promise.then(arrived, arrived);
    }
    hold.urls.push({ url, under });
    heldUrls++;
    return false;
  };
  const release = async (source: string) => {
    const h = held.get(source);
    if (!h) return;
    for (const entry of h.waitingFor) await entry.promise;
    const prior = await priorOf(portion.id, source).promise;
    held.delete(source);
    heldUrls -= h.urls.length;
    for (const { url, under } of h.urls) await take(source, url, prior, under?.value?.downloaded);
  };
  const releaseReady = async () => {
    while (ready.length > 0) await release(ready.shift()!);
  };

  const upTo = { bytes: identity.bytes, lastBreak: identity.lastBreak, onMore: () => { summary.grew = { lines: identity.lines }; } };
  let linesRead = 0;
  for await (const entry of readManifest(opts.manifest, upTo)) {
    if (opts.signal?.aborted) break;
    linesRead = entry.line;
    if (linesRead % PROGRESS_LINES === 0) opts.onProgress?.({ linesRead, sourcesStarted: 0, sources: null });
    while (portion.lastLine !== null && entry.line > portion.lastLine) {
      // The end of an earlier manifest's lines: its last chunks end here, as they did in its own start.
      for (const source of [...held.keys()]) await release(source);
      for (const source of [...buffers.keys()]) await flush(source);
      portion = portions[++portionIndex]!;
      portionChunks = new Map();
    }
    if ('error' in entry) {
      summary.badLines++;
      opts.onBadLine?.(entry);
      continue;
    }
    // By URL, not by source and URL: the same URL under two source names is one download too.
    if (!seen.add(entry.url)) {
      summary.duplicates++;
      continue;
    }
    hosts.add(entry.source, entry.origin, (source) => summary.sources.has(source));
    opts.guardedHosts?.add(entry.origin);
    if (!summary.sources.has(entry.source)) summary.sources.set(entry.source, { urls: 0, chunks: 0, alreadyDone: 0, downloadedBefore: 0, queuedElsewhere: 0, chunksOfOthers: 0 });
    summary.sources.get(entry.source)!.urls++;
    if (entry.source !== entry.origin) markHostSource(entry.origin, entry.source);
    if (admit(entry.source, entry.url, entry.origin)) await flush(entry.source);
    if (ready.length > 0) await releaseReady();
    while (heldUrls > MAX_HELD_URLS) await release(held.keys().next().value!);
  }
  for (const source of [...held.keys()]) await release(source);
  await opts.beforeMonitors?.(hosts.origins(summary.sources.keys()));
  // Many sources start at once: one by one, a few thousand sources would take minutes to start
  // (each is a store write and a signal-with-start), and the first would be crawling long
  // before the last had begun.
  let started = 0;
  opts.onProgress?.({ linesRead, sourcesStarted: 0, sources: summary.sources.size });
  await forEachLimit([...summary.sources.keys()], START_CONCURRENCY, async (source) => {
    // A chunk cut short by an abort must not be written: the next start writes it whole.
    if (!opts.signal?.aborted) await flush(source);
    await settle(source);
    addChunksOfOthers(source);
    await send(source);
    opts.onProgress?.({ linesRead, sourcesStarted: ++started, sources: summary.sources.size });
  });
  summary.sharedHosts = hosts.sharedHosts;
  ({ wwwTwins: summary.wwwTwins, siteGroups: summary.siteGroups } = hosts.finish(summary.sources));
  // An interrupted read has not seen every source.
  if (opts.catalog && !opts.signal?.aborted) {
    const used = new Set([...summary.sources.keys()].map((source) => catalogEntryName(opts.catalog!, source)));
    summary.unusedCatalogEntries = [...opts.catalog.keys()].filter((name) => !used.has(name));
  }
  return summary;
}
