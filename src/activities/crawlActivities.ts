import { ClockSkewWatch } from '../politeness/clockSkew';
import { setMaxListeners } from 'node:events';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { DEFAULT_ADAPTIVE } from '../politeness/adaptiveRate';
import { isThrottle } from '../politeness/classify';
import { quotaWaitMs, type SiteQuota } from '../politeness/rateLimitHeaders';
import { PAGE_BURST, pagesSinceImage } from '../politeness/pageRun';
import type { ObjectStore } from '../pipeline/store';
import type { WorkerNetwork } from '../pipeline/workerOutage';
import type { ConnectionWaits, FetchBatchInput, FetchBatchResult, FinalRecordInput, HostCrawlDelay, OpenLimitHint, OutcomeClass, RedirectHop, RefusalHint, RequestOutcome, WorkChunk } from '../shared/types';
import { chunkRecordFiles, chunkRecordFilesIn } from '../pipeline/keys';
import { chunkIndexKey, encodeFingerprints } from '../pipeline/downloadedIndex';
import { recordFile, type RecordFile } from '../shared/recordUnits';
import { MAX_LATENESS_MS, runPaced } from './pacedRunner';
import { chunkDoneKey } from '../shared/chunkRanges';
import { HEARTBEAT_EVERY_MS } from '../shared/heartbeat';
import { GrantAttempts } from './grantAttempts';
import type { GrantJournal, JournalWriter } from './grantJournal';
import { finishedFromRecord, recordOf } from './outcomeRecord';
import { closedLine, lostInFlight, lostOutcome, openLine } from './lostInFlight';
import { blockSource, isSourceBlocked } from './sourceBlocks';
import { describeStoreError } from '../pipeline/storeError';
import { CHUNK_UNREADABLE, STORE_RETRY_MS, STORE_UNAVAILABLE } from '../shared/storeOutage';
import type { CrawlMetrics } from './crawlMetrics';
import { log } from '../shared/log';

/** What handling one URL produced: the outcome the monitor sees, and the record to keep. */
export interface ProcessedUrl {
  outcome: Omit<RequestOutcome, 'final' | 'attempt'>;
  /** Extra fields for the metadata record (analysis, thumbnail key); not sent to workflows. */
  record?: Record<string, unknown>;
  /**
   * Nothing was sent for the URL (the slot went to robots.txt, or passed before the request could
   * leave): it takes a later slot of the same grant if one is left, else goes back unused. No
   * attempt is used.
   */
  requeue?: boolean;
  /** The request was answered with a redirect: this next hop takes the next slot (with `requeue`). */
  hop?: RedirectHop;
  /**
   * With `requeue`: the request met the site's close of an idle connection unanswered; it takes
   * the next slot again (as a hop does), neither a try of the URL nor an error of the site's.
   */
  resend?: boolean;
  /**
   * With `requeue`: robots.txt of the URL's origin could not be read, and is asked for again at
   * this time (epoch ms). Nothing more is sent to the source in this grant.
   */
  robotsRetryAtMs?: number;
  /** With `robotsRetryAtMs`: which origin's robots.txt, and why it could not be read. */
  robotsError?: string;
  /** An error outcome that is final although attempts are left (robots.txt given up on, a response that is not HTTP). */
  final?: boolean;
  /** With `requeue`: the request sent in the URL's slot was for a file of its origin's own (robots.txt, tdmrep.json). */
  siteFile?: 'robots.txt' | 'tdmrep.json';
  /** With `siteFile`: it was read from the store, no request made; the slot passed unused, not missed. */
  siteFileKept?: boolean;
  /**
   * With `requeue`: the store could not take the URL's thumbnail (the bytes are spooled). Nothing
   * more is sent to the source in this grant, and the monitor holds it for STORE_RETRY_MS.
   */
  storeFailure?: string;
  /** Done with an image another URL's redirect fetched just before: no bytes downloaded for it. */
  reused?: boolean;
}


export interface UrlProcessor {
  /**
   * Handles one URL. `sendBy` is the latest moment a request may leave for the site (its slot
   * plus the lateness bound): past it, hand the URL back unsent with `requeue`. `onConnectionWait`:
   * its request had to wait for a connection, all of the worker's to the site being busy.
   * `onQuota`: the response's rate-limit headers stated the site's quota; called as soon as the
   * headers arrive, before the body is analysed, so that nothing more goes out once none is left.
   */
  process(url: string, ctx: { source: string; attempt: number; signal: AbortSignal; sendBy?: number; mayGoLate?: () => boolean; hop?: RedirectHop; onConnectionWait?: (perSite: number) => void; onQuota?: (quota: SiteQuota) => void }): Promise<ProcessedUrl>;
  /**
   * Called ahead of the URL's slot (at `slotMs`): sees to it that a connection to its host will
   * be ready then, so the request can leave the moment its slot comes.
   */
  preconnect?(url: string, slotMs: number): void;
  /**
   * The time the site the URL's next request goes to asks for between requests (its robots.txt
   * Crawl-delay), with that site's origin, when known.
   */
  crawlDelay?(url: string): { origin: string; ms: number } | undefined;
  /**
   * The worker's requests open now to the site the URL's next request goes to, and the limit it
   * learnt for that site when one holds it (pipeline/siteDownloads.ts); undefined for a URL that
   * cannot be parsed (left to `process`).
   */
  openAt?(url: string): { origin: string; open: number; learnt?: number; starting?: true; refused?: true } | undefined;
  /** Limits other workers learnt for sites (FetchBatchInput.openLimits): kept to where this worker has not judged the site itself. */
  takeOpenLimits?(hints: Readonly<Record<string, OpenLimitHint>>): void;
  /** What this worker has judged of the origin's open downloads, for the source's monitor; undefined before a judgement. */
  openLimitHint?(origin: string): OpenLimitHint | undefined;
  /**
   * A grant starting at `startMs` is about to send to a site held for refusing requests beyond a
   * number open (openAt's `refused`): whether it waits for another worker's requests to be
   * answered first (pipeline/siteDownloads.ts othersMayHold); openAt counts them meanwhile.
   */
  othersMayHold?(origin: string, startMs: number, quietMs?: number): boolean;
  /** Sites other workers hold for refusing beyond a number open (FetchBatchInput.refusals): this worker keeps to them too. */
  takeRefusals?(hints: Readonly<Record<string, RefusalHint>>): void;
  /** The origin's hold for refusing beyond a number open, for the source's monitor; undefined when none holds it. */
  refusalHint?(origin: string): RefusalHint | undefined;
  /**
   * The URL's result when it is certain without sending anything or doing image work (robots.txt
   * disallows it, its address is refused, its redirect's target was fetched just before): it is
   * settled without taking a request slot. `hop`: where its redirects have got to.
   */
  decideWithoutRequest?(url: string, hop?: RedirectHop): ProcessedUrl | undefined;
  /**
   * Keeps finished URLs' outcomes and records that the store could not take: `process` returns
   * them later (reused, final) without a request, should the grant be given up on.
   */
  keepRecords?(kept: readonly { url: string; outcome: RequestOutcome; record: Record<string, unknown> }[]): Promise<void>;
  /** These URLs' records were stored: drops what keepRecords kept of them. */
  recordsStored?(urls: readonly string[]): Promise<void>;
  /**
   * Requests not sent since the worker started because its own network looked down
   * (workerOutage.ts): a grant during which this grew says so to its monitor.
   */
  networkDownFailures?(): number;
  /** Whether the worker's own network is down (workerOutage.ts): its activity slots follow it. */
  readonly network?: WorkerNetwork;
}

export interface Recorder {
  /**
   * Stores the final records of one unit of work durably; resolves once they are stored.
   * Writing the same unit again replaces it, so a retried activity never duplicates a record.
   */
  write(source: string, unit: RecordFile, records: Record<string, unknown>[]): Promise<void>;
  /** The records a unit holds, as parsed objects (lines that do not parse left out); undefined when it was never written. */
  read?(source: string, unit: RecordFile): Promise<unknown[] | undefined>;
}

export interface CrawlDeps {
  processor: UrlProcessor;
  recorder: Recorder;
  /** Where chunk files (URL lists) and their done-markers live. */
  store?: ObjectStore;
  /** Fallback hold when a 429/503 carries no usable Retry-After. */
  defaultHoldMs?: number;
  /** How long requests on the wire may finish after a cancellation (default CANCEL_GRACE_MS). */
  cancelGraceMs?: number;
  /** Counted when the worker serves metrics (CRAWL_METRICS_ADDRESS). */
  metrics?: CrawlMetrics;
  /** Each attempt's finished URLs as they finish, for a retry after a crash (grantJournal.ts). */
  journal?: GrantJournal;
}

interface Progress {
  /**
   * Item index -> its outcome and, when final, the record's extra fields (analysis); the rest
   * of the record is derived from the outcome when it is written, so it is not carried twice.
   */
  done?: [number, RequestOutcome, Record<string, unknown> | null][];
  /**
   * The same without the URLs (withoutUrls), written since session 42 instead of `done`: a build
   * before it, retrying such an attempt, finds no `done` and fetches the grant's URLs again
   * rather than writing records without their URLs.
   */
  slim?: [number, Omit<RequestOutcome, 'url'>, Record<string, unknown> | null][];
  /** Items without an outcome yet that are part-way through their redirects. */
  hops?: [number, RedirectHop][];
  /** Items whose run was under way (lostInFlight.ts): a retry after a death charges them a try. */
  open?: number[];
}

/**
 * A done entry as a heartbeat carries it: without its URL, which the retry has in its input,
 * and without the record's finalUrl when that is the same URL. With URLs of 3,000 characters
 * (signed CDN links) a grant of 500 beat 2.5 MB, over Temporal's 2 MB limit: the heartbeats
 * failed, the attempts timed out, and 331 of 600 images were downloaded three times.
 */
function withoutUrls(url: string, outcome: RequestOutcome, extra: Record<string, unknown> | null): [Omit<RequestOutcome, 'url'>, Record<string, unknown> | null] {
  const { url: _url, ...rest } = outcome;
  if (!extra || extra.finalUrl !== url) return [rest, extra];
  const { finalUrl: _f, ...kept } = extra;
  return [rest, { ...kept, sameFinalUrl: true }];
}

/** The entry withoutUrls made, whole again. */
function withUrls(url: string, outcome: Omit<RequestOutcome, 'url'>, extra: Record<string, unknown> | null): { outcome: RequestOutcome; extra: Record<string, unknown> | null } {
  if (!extra?.sameFinalUrl) return { outcome: { ...outcome, url }, extra };
  const { sameFinalUrl: _s, ...rest } = extra;
  return { outcome: { ...outcome, url }, extra: { ...rest, finalUrl: url } };
}

/** This many site errors in a row inside one grant and the activity stops sending (reflex); URLs failing again are not counted. */
export const ERROR_BURST = 5;

/**
 * Cancelled (its grant revoked, its crawl stopped), the activity sends nothing more at once, but
 * lets the requests already on the wire finish for this long: the site has done their work, and
 * aborting them would mean asking it again later.
 */
export const CANCEL_GRACE_MS = 5_000;

function strictest(hosts: ReadonlyMap<string, { ms: number }>): HostCrawlDelay {
  const [origin, { ms }] = [...hosts].reduce((a, b) => (b[1].ms > a[1].ms ? b : a));
  return { origin, delayMs: ms };
}

/**
 * A spent quota as the monitor hears of it: durations, not times (the worker's and the
 * workflow's clocks differ), and the site's own wait beside the capped hold when that was shorter.
 */
function quotaReport(spent: { untilMs: number; resetAtMs: number; limit?: number }, nowMs: number): Pick<FetchBatchResult, 'quotaHoldMs' | 'quotaLimit' | 'quotaResetMs'> {
  const holdMs = Math.max(1, spent.untilMs - nowMs);
  const resetMs = spent.resetAtMs - nowMs;
  return {
    quotaHoldMs: holdMs,
    ...(spent.limit !== undefined ? { quotaLimit: spent.limit } : {}),
    ...(resetMs > holdMs ? { quotaResetMs: resetMs } : {}),
  };
}

/** How early a slot may ask whether another worker's requests are open at its site: a timer fires a little ahead of the wall clock. */
const OTHERS_ASK_EARLY_MS = 50;

/** A grant's sites whose open-download judgements go to the monitor: a source spans a few hosts, not hundreds. */
const MAX_SITES_REPORTED = 16;

/** What the worker has judged of a grant's sites (open-download limits, refusal holds), for the source's monitor to hand on. */
function siteJudgementsOf(sites: ReadonlySet<string>, processor: UrlProcessor): { openLimits?: Record<string, OpenLimitHint>; refusals?: Record<string, RefusalHint> } {
  let openLimits: Record<string, OpenLimitHint> | undefined;
  let refusals: Record<string, RefusalHint> | undefined;
  for (const origin of sites) {
    const hint = processor.openLimitHint?.(origin);
    if (hint) (openLimits ??= {})[origin] = hint;
    const refusal = processor.refusalHint?.(origin);
    if (refusal) (refusals ??= {})[origin] = refusal;
  }
  return { ...(openLimits ? { openLimits } : {}), ...(refusals ? { refusals } : {}) };
}

const grantRecordFile = (input: FetchBatchInput) => recordFile(input.unit, input.batchId, `g${input.grantId}`);

type Done = Map<number, { outcome: RequestOutcome; extra: Record<string, unknown> | null }>;
type Hops = Map<number, RedirectHop>;

/** A journal line as the grant's item it names, when it names one of this grant's items by index and URL. */
function journalEntry(line: unknown, input: FetchBatchInput): [number, { outcome: RequestOutcome; extra: Record<string, unknown> | null }] | undefined {
  if (!line || typeof line !== 'object') return undefined;
  const { i, outcome, extra } = line as { i?: unknown; outcome?: unknown; extra?: unknown };
  if (typeof i !== 'number' || !outcome || typeof outcome !== 'object') return undefined;
  const item = input.items[i];
  if (!item || (outcome as RequestOutcome).url !== item.url) return undefined;
  return [i, { outcome: outcome as RequestOutcome, extra: extra && typeof extra === 'object' ? extra as Record<string, unknown> : null }];
}

const attempts = new GrantAttempts<{ done: Done; hops: Hops }>();
/** This worker's clock against the server's, from each fetch activity's start (see ClockSkewWatch). */
const clockSkew = new ClockSkewWatch();

export function createCrawlActivities(deps: CrawlDeps) {
  /**
   * This worker's fetch activities, oldest first. While its own network is down only the oldest
   * goes on sending in its slots, to learn when the network is back; the others hand their URLs
   * back at their next slot, for a worker whose network works (activitySlots.ts holds back new
   * ones). Before, they held them to the end of their windows, 40 s for most sources.
   */
  const fetches = new Set<object>();

  async function fetchBatch(input: FetchBatchInput): Promise<FetchBatchResult> {
    if (!Array.isArray(input.items) || !input.schedule) throw ApplicationFailure.nonRetryable('fetchBatch needs items and a schedule', 'InvalidInput');
    const ctx = Context.current();
    // Its task may have waited while this worker's network was down and it took no fetches
    // (activitySlots.ts): that wait is the outage's, neither the clock's, nor the trip's, nor
    // that of a worker falling behind.
    const held = deps.processor.network?.wasDownSince(ctx.info.currentAttemptScheduledTimestampMs) ?? false;
    const skew = held ? undefined : clockSkew.sample(Date.now() - ctx.info.currentAttemptScheduledTimestampMs, Date.now());
    if (skew) log.warn({ event: 'clock-skew', skewMs: skew.skewMs }, skew.note);
    // How long the grant took to get here: the monitor leads later windows by about as much. A
    // retry's start says nothing about that trip.
    const issuedMs = input.schedule.issuedMs;
    const dispatchMs = !held && ctx.info.attempt === 1 && issuedMs !== undefined ? Math.max(0, Date.now() - issuedMs) : undefined;
    const prior = ctx.info.heartbeatDetails as Progress | undefined;
    const done: Done = new Map([
      ...(prior?.done ?? []).map(([i, outcome, extra]) => [i, { outcome, extra }] as const),
      ...(prior?.slim ?? []).flatMap(([i, outcome, extra]) => (input.items[i] ? [[i, withUrls(input.items[i]!.url, outcome, extra)] as const] : [])),
    ]);
    // Where each URL's redirects have got to: from the batch (an earlier grant), then from this
    // grant's earlier attempt, which may have gone further.
    const hops: Hops = new Map();
    input.items.forEach((item, i) => { if (item.hop) hops.set(i, item.hop); });
    for (const [i, hop] of prior?.hops ?? []) hops.set(i, hop);
    /** Items whose run is under way in this attempt. */
    const underWay = new Set<number>();
    let lastBeat = 0;
    const beat = () => {
      lastBeat = Date.now();
      const open = [...underWay].filter((i) => !done.has(i));
      ctx.heartbeat({
        slim: [...done].map(([i, d]) => [i, ...withoutUrls(input.items[i]!.url, d.outcome, d.extra)]),
        hops: [...hops].filter(([i]) => !done.has(i)),
        ...(open.length ? { open } : {}),
      } satisfies Progress);
    };
    // Beats from the start, also while waiting for an attempt this one replaces to stop. A tick
    // skips only if another beat went out in the last half interval: comparing with the full
    // interval skipped every other tick whenever timers drifted by a millisecond.
    const ticker = setInterval(() => { if (Date.now() - lastBeat >= HEARTBEAT_EVERY_MS / 2) beat(); }, HEARTBEAT_EVERY_MS);
    const key = JSON.stringify([input.source, input.batchId, input.grantId]);
    const attempt = attempts.begin(key);
    const journal = deps.journal?.open(key, ctx.info.attempt > 1);
    for (const line of journal?.earlier ?? []) {
      const entry = journalEntry(line, input);
      if (entry && !done.has(entry[0])) done.set(...entry);
    }
    try {
      const earlier = await attempt.takeOver();
      for (const [i, d] of earlier?.done ?? []) if (!done.has(i)) done.set(i, d);
      for (const [i, hop] of earlier?.hops ?? []) if (hop.redirects > (hops.get(i)?.redirects ?? 0)) hops.set(i, hop);
      if (ctx.info.attempt > 1) await takeUpStoredRecords(input, done);
      // An attempt in this process that this one replaced settled its runs before it stopped.
      if (ctx.info.attempt > 1 && !earlier) chargeLost(input, done, journal?.earlier ?? [], prior?.open, journal?.writer);
      const networkDownBefore = deps.processor.networkDownFailures?.();
      const self = {};
      fetches.add(self);
      const standDown = () => deps.processor.network?.down === true && fetches.values().next().value !== self;
      const result = await crawlGrant(input, ctx, done, hops, underWay, beat, attempt.superseded, standDown, journal?.writer).finally(() => fetches.delete(self));
      // Its records are stored (or it had none): what it finished is in its result now.
      journal?.writer.discard();
      // Its missed slots were the worker's network, not a worker falling behind (status notes).
      const networkDown = result.networkDown === true || (networkDownBefore !== undefined && deps.processor.networkDownFailures!() > networkDownBefore);
      return { ...result, ...(held ? { missedSlots: 0 } : {}), ...(dispatchMs !== undefined ? { dispatchMs } : {}), ...(networkDown ? { networkDown } : {}) };
    } finally {
      clearInterval(ticker);
      attempt.release({ done, hops });
    }
  }

  /**
   * An earlier attempt of the grant may have stored its records and returned, and its result
   * never reached the server (down or restarting then): the retry finds those URLs finished in
   * the grant's record file, not in its last heartbeat. Before, it asked the site for them again
   * (21 URLs of one grant when the embedded server was killed and started again).
   */
  async function takeUpStoredRecords(input: FetchBatchInput, done: Done): Promise<void> {
    // Unreadable (the store out): the URLs are fetched again, as before this was read.
    const found = await deps.recorder.read?.(input.source, grantRecordFile(input)).catch(() => undefined);
    if (!found?.length) return;
    const open = new Map<string, number>();
    input.items.forEach((item, i) => { if (!done.has(i) && !open.has(item.url)) open.set(item.url, i); });
    for (const r of found) {
      const finished = finishedFromRecord(r);
      const i = finished ? open.get(finished.outcome.url) : undefined;
      if (!finished || i === undefined) continue;
      done.set(i, finished);
      open.delete(finished.outcome.url);
    }
  }

  /** URLs the attempts before this one left under way as their process died: each is charged the try it was on. */
  function chargeLost(input: FetchBatchInput, done: Done, journalLines: readonly unknown[], heartbeatOpen: readonly unknown[] | undefined, journal?: JournalWriter): void {
    const lost = lostInFlight(journalLines, heartbeatOpen, done, input.items.length);
    if (!lost.length) return;
    let ended = 0;
    for (const i of lost) {
      const outcome = lostOutcome(input.items[i]!, input.maxAttempts);
      const entry = { outcome, extra: outcome.final ? {} : null };
      done.set(i, entry);
      journal?.add({ i, ...entry });
      if (outcome.final) {
        ended += 1;
        deps.metrics?.finished(outcome.cls, undefined);
      }
    }
    log.warn({ event: 'lost-with-worker', source: input.source, grantId: input.grantId, urls: lost.length, ended },
      'the attempt before this one died with URLs under way: each is charged the try it was on, and those at their last try end as errors');
  }

  async function crawlGrant(input: FetchBatchInput, ctx: Context, done: Done, hops: Hops, underWay: Set<number>, beat: () => void, superseded: () => boolean, standDown: () => boolean, journal?: JournalWriter): Promise<FetchBatchResult> {
    let retryAfterMs: number | undefined;
    let throttled = false;
    let errorRun = 0;
    let pageRun = 0;
    // The site's robots.txt asks for more time between requests than this grant's slots leave,
    // and every URL of the grant is on such a site (or it asks for none of the grant's burst):
    // the monitor lowers the source's rate to it.
    let crawlDelayMs: number | undefined;
    // A burst would put requests closer together than any delay: nothing more is sent. A grant
    // whose every URL waits for its host goes on at the hosts' pace instead: stopped, it left
    // the rest of its window unused (a new source's first window shared by two batches: no
    // request for 10 s after robots.txt).
    let burstTooClose = false;
    let robotsRetryMs: number | undefined;
    let robotsRetryAtMs: number | undefined;
    let robotsError: string | undefined;
    let storeFailure: string | undefined;
    let stoodDown = false;
    // The site's rate-limit headers said none of its requests is left until then (rateLimitHeaders.ts).
    let quotaSpent: { untilMs: number; resetAtMs: number; limit?: number } | undefined;
    const onQuota = (quota: SiteQuota) => {
      const now = Date.now();
      const waitMs = quotaWaitMs(quota, now, deps.defaultHoldMs ?? 5_000);
      if (waitMs === undefined || waitMs <= 0) return;
      const untilMs = now + Math.min(waitMs, input.maxRetryAfterMs ?? DEFAULT_ADAPTIVE.maxRetryAfterMs);
      quotaSpent = {
        untilMs: Math.max(untilMs, quotaSpent?.untilMs ?? 0),
        resetAtMs: Math.max(now + waitMs, quotaSpent?.resetAtMs ?? 0),
        ...(quota.limit !== undefined ? { limit: quota.limit } : {}),
      };
      // The worker's other grants of the source stop too, as they do for a 429.
      blockSource(input.source, quotaSpent.untilMs);
    };
    const { intervalMs, burstSlots } = input.schedule;
    const urlOf = (i: number) => hops.get(i)?.url ?? input.items[i]!.url;
    const delayOf = (url: string) => deps.processor.crawlDelay?.(url);
    // Hosts whose Crawl-delay is longer than the grant's spacing, in a grant that also holds URLs
    // of other hosts (a source spanning a site and the host its images are on): each gets a
    // request at most once per its delay, counted from the end of the one before, and its URLs
    // wait for that while the others take the slots. Before, the whole source went at the
    // strictest host's pace (40 URLs at 2/s, 10 of them behind a Crawl-delay of 5: 222 s, now 69 s).
    const delayedHosts = new Map<string, { ms: number; freeAtMs: number }>();
    const delayedHostOf = (url: string) => {
      const d = delayOf(url);
      return d && delayedHosts.get(d.origin);
    };
    // Every URL of the grant as given, those an earlier attempt finished too: a retry left with
    // only the delayed host's URLs is still a grant of a source that spans hosts.
    const everyItemWaits = () => input.items.every((_, i) => delayedHostOf(urlOf(i)) !== undefined);
    /**
     * Takes note of the Crawl-delay of the site `url` is on, as far as its robots.txt is known;
     * returns that site's entry when its delay is longer than the grant's spacing.
     */
    const checkCrawlDelay = (url: string) => {
      const d = delayOf(url);
      if (d === undefined) return undefined;
      if (d.ms <= intervalMs) {
        if (burstSlots > 0) {
          crawlDelayMs = Math.max(crawlDelayMs ?? 0, d.ms);
          burstTooClose = true;
        }
        return undefined;
      }
      const known = delayedHosts.get(d.origin);
      if (known) return known;
      // The grant's first slot is at least a spacing after the last request of the window before
      // it, whichever worker sent that. A retry cannot know what the attempt before it sent.
      const host = { ms: d.ms, freeAtMs: ctx.info.attempt === 1 ? input.schedule.startMs - intervalMs + d.ms : Infinity };
      delayedHosts.set(d.origin, host);
      if (everyItemWaits()) crawlDelayMs = Math.max(crawlDelayMs ?? 0, ...[...delayedHosts.values()].map((h) => h.ms));
      return host;
    };
    /** A request to the site `url` is on has just ended (or gone out): its next one waits the delay. */
    const noteHostRequest = (h: { ms: number; freeAtMs: number } | undefined) => {
      if (h) h.freeAtMs = Math.max(h.freeAtMs, Date.now() + h.ms);
    };
    const noteRequest = (url: string) => noteHostRequest(checkCrawlDelay(url));
    const mayGoNow = (i: number, slotMs: number) => (delayedHosts.size === 0 ? true : (delayedHostOf(urlOf(i))?.freeAtMs ?? 0) <= slotMs);
    input.items.forEach((_, i) => { if (!done.has(i)) checkCrawlDelay(urlOf(i)); });
    const settle = (i: number, processed: ProcessedUrl): 'done' | 'requeue' | 'next' | 'later' => {
      const item = input.items[i]!;
      if (processed.outcome.sent) deps.metrics?.request(processed.siteFile ?? 'image', processed.outcome.status, processed.outcome.ttfbMs);
      if (processed.hop) hops.set(i, processed.hop);
      if (processed.robotsRetryAtMs !== undefined) {
        robotsRetryMs = Math.max(robotsRetryMs ?? 0, processed.robotsRetryAtMs - Date.now(), 1);
        robotsRetryAtMs = Math.max(robotsRetryAtMs ?? 0, processed.robotsRetryAtMs);
      }
      if (processed.robotsError !== undefined) robotsError ??= processed.robotsError;
      if (processed.storeFailure !== undefined) storeFailure ??= processed.storeFailure;
      // Its host's robots.txt is to be read again: back to the batch, while the grant goes on
      // with the source's other hosts. Or the store failed: the grant sends nothing more, and
      // the URL waits in the spool for a grant after the hold. Neither slot was missed.
      if (processed.requeue && (processed.robotsRetryAtMs !== undefined || processed.storeFailure !== undefined)) return 'later';
      // A URL part-way through its redirects goes first in line: its next hop takes the next slot.
      // So does one whose slot read its host's robots.txt (or tdmrep.json): that slot was not
      // missed (missed slots read as a worker falling behind), and the image follows on the same connection.
      if (processed.requeue) return hops.has(i) || processed.resend || (processed.siteFile && (processed.outcome.sent || processed.siteFileKept)) ? 'next' : 'requeue';
      const o = processed.outcome;
      const final = o.cls !== 'error' || item.attempt >= input.maxAttempts || processed.final === true;
      const outcome: RequestOutcome = { ...o, url: item.url, final, attempt: item.attempt, atMs: Date.now() };
      // A URL failing again (a broken image at its second or third try) is no news of the site:
      // a chunk's tail of them ended each grant after five, at half the source's rate.
      if (o.sent && !(o.cls === 'error' && item.failedBefore)) errorRun = o.cls === 'error' ? errorRun + 1 : 0;
      pageRun = pagesSinceImage(pageRun, outcome);
      if (isThrottle(o.status)) {
        throttled = true;
        // The site's Retry-After, up to the longest the source's monitor honours.
        const hold = Math.min(o.retryAfterMs ?? deps.defaultHoldMs ?? 5_000, input.maxRetryAfterMs ?? DEFAULT_ADAPTIVE.maxRetryAfterMs);
        retryAfterMs = Math.max(retryAfterMs ?? 0, hold);
        blockSource(input.source, Date.now() + hold);
      }
      const entry = { outcome, extra: final ? processed.record ?? {} : null };
      done.set(i, entry);
      journal?.add({ i, ...entry });
      if (final) deps.metrics?.finished(o.cls, o.cls === 'done' && !processed.reused && typeof processed.record?.bytes === 'number' ? processed.record.bytes : undefined);
      return 'done';
    };
    // Requests that found every connection of the worker's to their site busy: the misses are
    // the site's slow answers, not a worker falling behind (connectionsFullNote).
    let connectionWaits: ConnectionWaits | undefined;
    const onConnectionWait = (perSite: number) => {
      connectionWaits = { requests: (connectionWaits?.requests ?? 0) + 1, perSite };
      deps.metrics?.waitedForConnection();
    };
    // Slots that passed because the site had as many requests open as it bears (learnt), or as
    // its catalogue entry allows (maxConnections): told to the monitor as requests that waited
    // for a connection, with the limit.
    const openAt = deps.processor.openAt?.bind(deps.processor);
    const given = input.maxConnections;
    if (input.openLimits) deps.processor.takeOpenLimits?.(input.openLimits);
    if (input.refusals) deps.processor.takeRefusals?.(input.refusals);
    // The sites this grant's requests went to: what the worker judged of them goes to the monitor.
    const sites = new Set<string>();
    /** Held sites this grant has asked whether another worker's requests may still be open there. */
    const othersAsked = new Set<string>();
    /** The limit the URL's site is held to now, when it has that many open; undefined when it may have one more. */
    const heldBy = (url: string): { limit: number; given: boolean; starting?: true; refused?: true } | undefined => {
      let at = openAt?.(url);
      if (!at) return undefined;
      // Asked once its window has begun: the activity starts up to a few seconds ahead of it, while
      // this worker may still be sending the window before (asked then, it waited at every start).
      if (at.refused && !othersAsked.has(at.origin) && othersAsked.size < MAX_SITES_REPORTED && Date.now() >= input.schedule.startMs - OTHERS_ASK_EARLY_MS) {
        othersAsked.add(at.origin);
        if (deps.processor.othersMayHold?.(at.origin, input.schedule.startMs, input.quietBeforeMs)) at = openAt!(url) ?? at;
      }
      if (sites.size < MAX_SITES_REPORTED) sites.add(at.origin);
      const limit = Math.min(at.learnt ?? Infinity, given ?? Infinity);
      if (at.open < limit) return undefined;
      return limit === given ? { limit, given: true } : { limit, given: false, ...(at.starting ? { starting: true } : {}), ...(at.refused ? { refused: true } : {}) };
    };
    const heldSlots = new Set<number>();
    let heldLimit: { limit: number; given: boolean; starting?: true; refused?: true } | undefined;
    let held = false;
    /** Whether an item in line waits for its site's requests to end (not only for a Crawl-delay). */
    const noteHeld = (line: readonly number[], slotMs: number): boolean => {
      for (const i of line) {
        const by = heldBy(urlOf(i));
        if (!by) continue;
        heldLimit = by;
        if (heldSlots.size < 100_000) heldSlots.add(slotMs);
        return true;
      }
      return false;
    };
    // Requests in flight are aborted only a grace after a cancellation (CANCEL_GRACE_MS).
    const inFlight = new AbortController();
    // Every request adds an abort listener to this signal; many in flight is normal here.
    setMaxListeners(0, inFlight.signal);
    let grace: ReturnType<typeof setTimeout> | undefined;
    const onCancel = () => { grace = setTimeout(() => inFlight.abort(new Error('cancelled: grant revoked or crawl stopped')), deps.cancelGraceMs ?? CANCEL_GRACE_MS); };
    if (ctx.cancellationSignal.aborted) onCancel();
    else ctx.cancellationSignal.addEventListener('abort', onCancel, { once: true });
    const run = await runPaced({
      count: input.items.length,
      // The float is for a late start. A retry cannot know whether the attempt before it sent
      // late in it; within the float, a second request could follow that one by less than a spacing.
      schedule: ctx.info.attempt === 1 || !input.schedule.floatMs ? input.schedule : { ...input.schedule, floatMs: 0 },
      skip: new Set(done.keys()),
      signal: ctx.cancellationSignal,
      // A URL part-way through its redirects goes next to its next hop's origin.
      prepare: deps.processor.preconnect && ((i, slotMs) => { if (mayGoNow(i, slotMs)) deps.processor.preconnect!(urlOf(i), slotMs); }),
      // A URL of a host that waits out its Crawl-delay gives its slot to another host's; among
      // those that may go, such a URL first, as its host has the fewest slots to spare.
      // A URL whose site has as many of the worker's requests open as it bears waits too.
      choose: (line, slotMs) => {
        const open = (i: number) => !openAt || heldBy(urlOf(i)) === undefined;
        held = false;
        if (delayedHosts.size === 0 && open(line[0]!)) return 0;
        const delayed = (i: number) => (delayedHosts.size === 0 ? undefined : delayedHostOf(urlOf(i)));
        const ready = delayedHosts.size === 0 ? -1 : line.findIndex((i) => (delayed(i)?.freeAtMs ?? Infinity) <= slotMs && open(i));
        const k = ready >= 0 ? ready : line.findIndex((i) => delayed(i) === undefined && open(i));
        held = k < 0 && openAt !== undefined && noteHeld(line, slotMs);
        return k;
      },
      heldOpen: () => held,
      shouldStop: () => superseded() || (stoodDown ||= standDown()) || throttled || quotaSpent !== undefined || burstTooClose || storeFailure !== undefined || errorRun >= ERROR_BURST || pageRun >= PAGE_BURST || isSourceBlocked(input.source, Date.now(), input.maxRetryAfterMs ?? DEFAULT_ADAPTIVE.maxRetryAfterMs),
      run: async (i, slotMs, mayGoLate) => {
        const item = input.items[i]!;
        const sendBy = slotMs + MAX_LATENESS_MS;
        const target = urlOf(i);
        // Its host's robots.txt may have been read since the grant began, by another grant on
        // this worker: its Crawl-delay holds from now on, the first request a delay after the
        // window before. Unchecked, a grant that began before the worker knew of the delay sent
        // in its first slot, 520 ms after another grant's request to the host. The item takes a
        // later slot (none if the delay rules out this grant's burst); this one was not missed.
        const host = checkCrawlDelay(target);
        if ((host?.freeAtMs ?? -Infinity) > slotMs || burstTooClose) return 'next';
        noteHostRequest(host);
        underWay.add(i);
        journal?.add(openLine(i));
        try {
          const processed = await deps.processor.process(item.url, { source: input.source, attempt: item.attempt, signal: inFlight.signal, sendBy, mayGoLate, hop: hops.get(i), onConnectionWait, onQuota });
          // Its robots.txt may have been read in this slot; a redirect may lead to another host.
          noteRequest(target);
          if (processed.hop) checkCrawlDelay(processed.hop.url);
          // Cut off by our own abort, not failed by the site: no attempt used, nothing held against
          // the site's health; it goes back unused.
          if (inFlight.signal.aborted && processed.outcome.cls === 'error' && processed.outcome.status === undefined) return 'requeue';
          return settle(i, processed);
        } finally {
          // Finished, its entry in the journal ends it; otherwise this line does (a throw too:
          // only a process that died leaves a run open).
          underWay.delete(i);
          if (!done.has(i)) journal?.add(closedLine(i));
        }
      },
      // Ruled out without a request (robots.txt disallows it, say): no slot spent on it.
      decide: deps.processor.decideWithoutRequest && ((i) => {
        const processed = deps.processor.decideWithoutRequest!(input.items[i]!.url, hops.get(i));
        return processed && settle(i, processed);
      }),
      requeued: (r) => (r === 'next' || r === 'later' ? r : r === 'requeue'),
    }).catch((err) => {
      beat(); // keep what finished, so the retry does not ask the site again
      throw err;
    }).finally(() => {
      clearTimeout(grace);
      ctx.cancellationSignal.removeEventListener('abort', onCancel);
    });
    // The newer attempt writes the records and reports; this one's result would be ignored.
    if (superseded()) throw ApplicationFailure.retryable('superseded by a newer attempt of the same grant', 'Superseded');
    // Records are stored before the activity reports success: a crash here means a retry,
    // which skips the URLs already handled (heartbeat, record file) and rewrites the same file.
    // A retry writes the file even with nothing in it: one an earlier attempt wrote that this
    // one could not read holds URLs that go back to the batch and would get a second record
    // under another grant.
    const records = [...done.values()].flatMap((d) => (d.extra ? [{ ...recordOf(input.source, d.outcome), ...d.extra }] : []));
    if (records.length || ctx.info.attempt > 1) {
      try {
        await deps.recorder.write(input.source, grantRecordFile(input), records);
      } catch (err) {
        // Retried as any failure is; when the retries fail too, the batch puts the grant's URLs
        // back without using their attempts and the monitor holds the source (STORE_UNAVAILABLE).
        // What they finished is kept on this worker meanwhile: without it, a store out for longer
        // than the retries cost the site a second request for each (45 of 300 in a disk-full run).
        const kept = [...done.values()].flatMap((d) => (d.extra ? [{ url: d.outcome.url, outcome: d.outcome, record: d.extra }] : []));
        await deps.processor.keepRecords?.(kept).catch((keepErr: unknown) => log.warn({ event: 'records-not-kept', source: input.source, error: String(keepErr) }, 'finished URLs not kept: a later grant asks for them again'));
        throw ApplicationFailure.retryable(`the store failed writing records: ${describeStoreError(err)}`, STORE_UNAVAILABLE);
      }
      await deps.processor.recordsStored?.(records.map((r) => r.url as string)).catch(() => undefined);
    }
    beat();
    const unused = run.unused.sort((a, b) => a - b);
    // The batch's last URLs all ended: the done-marker follows the records here rather than in
    // a step of the batch's own (a history event and, on a busy worker, a wait in its task).
    const allFinal = input.markDone !== undefined && unused.length === 0 && done.size === input.items.length && [...done.values()].every((d) => d.outcome.final);
    // Failing here must not fail the grant (its URLs would be counted as tried again): the
    // batch leaves the marker itself, with retries, when this one says it did not.
    const chunkMarkedDone = allFinal && await markChunkDone(input.markDone!).then(() => true, () => false);
    // A URL part-way through its redirects goes back with where it has got to: its next grant
    // continues from there instead of asking the site again for the hops already made.
    const midChain = unused.flatMap((i): [number, RedirectHop][] => (hops.has(i) ? [[i, hops.get(i)!]] : []));
    // Some host went at its own Crawl-delay while the grant went on with the others.
    const hostPaced = crawlDelayMs === undefined && delayedHosts.size > 0;
    // Left because their host's Crawl-delay kept them waiting: the batch spreads them over its next grants.
    const hostWaited = hostPaced ? unused.filter((i) => delayedHostOf(urlOf(i)) !== undefined) : [];
    // A monitor capped to one host's Crawl-delay lifts the cap by it: one lookup for a grant
    // that sent to a host without a delay first, the usual case.
    const leastHostDelay = () => {
      let least: number | undefined;
      for (const [i, d] of done) {
        if (!d.outcome.sent) continue;
        least = Math.min(least ?? Infinity, delayOf(input.items[i]!.url)?.ms ?? 0);
        if (least === 0) break;
      }
      return least !== undefined ? { leastHostDelayMs: least } : {};
    };
    // The monitor holds the whole source until robots.txt is read again only when this grant
    // could send nothing else: a source spanning several hosts went on with the others.
    const holdForRobots = robotsRetryMs !== undefined && ![...done.values()].some((d) => d.outcome.sent);
    return {
      outcomes: [...done.values()].map((d) => d.outcome),
      unused,
      ...(midChain.length ? { hops: midChain } : {}),
      retryAfterMs,
      ...(crawlDelayMs !== undefined ? { crawlDelayMs } : {}),
      ...(holdForRobots ? { robotsRetryMs, ...(robotsError !== undefined ? { robotsError } : {}) } : {}),
      ...(robotsRetryAtMs !== undefined && !holdForRobots ? { robotsHostWait: { error: robotsError ?? 'robots.txt could not be read', retryAtMs: robotsRetryAtMs } } : {}),
      ...(storeFailure !== undefined ? { storeRetryMs: STORE_RETRY_MS, storeError: storeFailure } : {}),
      // A duration, not a time: the worker's and the workflow's clocks differ.
      ...(quotaSpent !== undefined && !throttled ? quotaReport(quotaSpent, Date.now()) : {}),
      ...(hostPaced ? { hostCrawlDelay: strictest(delayedHosts) } : {}),
      ...(hostWaited.length ? { hostWaited } : {}),
      ...leastHostDelay(),
      // A retried attempt's lost slots went with the attempt that failed (records the store could
      // not take, a worker that died), not to a worker falling behind: counted, a disk-full hold
      // ended in "workers behind" (502 of 1,458 slots, a retry starting after its window).
      missedSlots: ctx.info.attempt === 1 ? run.missed : 0,
      // A site held to its learnt limit is told as such, the pool's waits before it was learnt aside.
      ...(heldLimit !== undefined && ctx.info.attempt === 1 ? { connectionWaits: { requests: heldSlots.size, perSite: heldLimit.limit, ...(heldLimit.given ? { given: true } : { learnt: true, ...(heldLimit.starting ? { starting: true } : {}), ...(heldLimit.refused ? { refused: true } : {}) }) } }
        : connectionWaits && ctx.info.attempt === 1 ? { connectionWaits } : {}),
      ...siteJudgementsOf(sites, deps.processor),
      ...(run.decided > 0 ? { decidedWithoutRequest: run.decided } : {}),
      // A retried attempt knows nothing of the sends of the attempt before it.
      ...(run.lastSendMs !== undefined && ctx.info.attempt === 1 ? { lastSendMs: run.lastSendMs } : {}),
      // Handed back unsent for this worker's network: its window is free from its start, as if
      // the last request had gone a spacing before it. Without it the URLs waited for the end
      // of the window (40 s) before another worker was granted them.
      ...(run.lastSendMs === undefined && ctx.info.attempt === 1 && stoodDown ? { lastSendMs: input.schedule.startMs - intervalMs } : {}),
      ...(stoodDown ? { networkDown: true } : {}),
      ...(chunkMarkedDone ? { chunkMarkedDone } : {}),
    };
  }

  async function loadChunk(chunk: WorkChunk): Promise<string[]> {
    if (chunk.urls) return chunk.urls;
    if (!chunk.spool || !deps.store) throw ApplicationFailure.nonRetryable(`chunk ${chunk.chunkId} has neither urls nor a readable spool`, 'InvalidInput');
    const body = await deps.store.get(chunk.spool);
    const sameStore = 'do `crawl start` and the workers (each its --data-dir or CRAWL_DATA_DIR, or its S3 settings) use the same store? ' +
      '(`crawl run --out OUT` with TEMPORAL_ADDRESS set: its workers need --data-dir OUT)';
    if (!body) throw ApplicationFailure.nonRetryable(`chunk ${chunk.chunkId}: ${chunk.spool} is missing from ${deps.store.description}: ${sameStore}`, CHUNK_UNREADABLE);
    const urls = body.toString('utf8').split('\n').map((l) => l.trim()).filter(Boolean);
    if (urls.length !== chunk.count) {
      throw ApplicationFailure.nonRetryable(`chunk ${chunk.chunkId}: ${chunk.spool} in ${deps.store.description} holds ${urls.length} URLs, expected ${chunk.count}: ${sameStore}`, CHUNK_UNREADABLE);
    }
    return urls;
  }

  /**
   * Leaves a marker so that starting the same manifest again skips this chunk, and, before it,
   * the chunk's downloaded URLs in its source's index (see downloadedIndex), so that another
   * manifest listing them does not download them again.
   */
  async function markChunkDone(chunk: WorkChunk): Promise<void> {
    if (!chunk.spool || !deps.store) return;
    const index = chunkIndexKey(chunk.spool);
    if (index) {
      const downloaded = [...(await chunkRecords(chunkRecordFilesIn(index.segment, chunk.chunkId)))].flatMap(([url, outcome]) => (outcome === 'done' ? [url] : []));
      // Written when empty too: beside the chunk's `.queued` marker it says the chunk is finished.
      await deps.store.put(index.key, encodeFingerprints(downloaded), 'application/octet-stream');
    }
    await deps.store.put(chunkDoneKey(chunk.spool), new Date().toISOString(), 'text/plain');
  }

  /** The URLs recorded in a chunk's record files (every run of its batch), with their outcome. */
  async function chunkRecords({ prefix, rest }: { prefix: string; rest: RegExp }): Promise<Map<string, OutcomeClass>> {
    const found = new Map<string, OutcomeClass>();
    if (!deps.store) return found;
    for await (const key of deps.store.list(prefix)) {
      if (!rest.test(key.slice(prefix.length))) continue;
      const body = await deps.store.get(key);
      for (const line of body?.toString('utf8').split('\n') ?? []) {
        if (!line) continue;
        try {
          const r = JSON.parse(line) as { url?: unknown; outcome?: unknown };
          if (typeof r.url === 'string' && typeof r.outcome === 'string') found.set(r.url, r.outcome as OutcomeClass);
        } catch {
          // A line that does not parse says nothing about its URL: it is crawled again.
        }
      }
    }
    return found;
  }

  /**
   * What a batch starts from, in one local activity (one history event): its chunk's URLs and,
   * with `recorded`, what earlier runs of its batch recorded of them. URLs given in the chunk
   * itself are in the batch's input already and are not returned (the result is in history).
   */
  async function chunkWork(input: { source: string; chunk: WorkChunk; recorded: boolean }): Promise<{ urls?: string[]; recorded: { url: string; outcome: OutcomeClass }[] }> {
    const [urls, recorded] = await Promise.all([
      input.chunk.urls ? undefined : loadChunk(input.chunk),
      input.recorded ? recordedUrls({ source: input.source, chunkId: input.chunk.chunkId }) : [],
    ]);
    return { ...(urls ? { urls } : {}), recorded };
  }

  /**
   * URLs of a chunk that an earlier run of its batch recorded already (a stopped crawl started
   * again), with their outcome: the new run does not crawl them twice.
   */
  async function recordedUrls(input: { source: string; chunkId: string }): Promise<{ url: string; outcome: OutcomeClass }[]> {
    const found = await chunkRecords(chunkRecordFiles(input.source, input.chunkId));
    return [...found].map(([url, outcome]) => ({ url, outcome }));
  }

  async function recordFinal(input: FinalRecordInput): Promise<void> {
    await deps.recorder.write(input.source, input.unit, input.outcomes.map((o) => recordOf(input.source, o)));
    for (const o of input.outcomes) deps.metrics?.finished(o.cls, undefined);
  }

  return { fetchBatch, loadChunk, recordedUrls, chunkWork, markChunkDone, recordFinal };
}

export type CrawlActivities = ReturnType<typeof createCrawlActivities>;
