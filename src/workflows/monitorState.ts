import { slotsNeeded } from '../shared/grantItems';
import { DEFAULT_ADAPTIVE } from '../politeness/adaptiveRate';
import { DEFAULT_GOVERNOR, Governor, type GovernorConfig, type GovernorState, type PolicyEvent, type ReportPolicy } from '../politeness/governor';
import { windowCounts } from '../politeness/breaker';
import { median } from '../politeness/latency';
import { slotsWithMissAllowance, tailGrantSlots, updateMissRate, windowStretch } from '../politeness/missedSlots';
import { ceilings } from '../politeness/pacing';
import { nextSameImage, type SameImageRun } from '../politeness/sameImage';
import { addInterval, appendRange, chunkOf, isChunkRange, rangeChunks, rangeUrls, subRange, unseenParts, type Intervals } from '../shared/chunkRanges';
import type { Grant, OpenLimitHint, OutcomeClass, OutcomeReport, RefusalHint, SourceConfig, TokenRequest, WorkChunk, WorkItem } from '../shared/types';
import type { BatchFinished } from './messages';
import { nextWatchMs } from './lostBatches';
import type { MonitorShown } from '../temporal/searchAttributes';
import type { MonitorStats } from './monitorStats';

/**
 * The monitor's bookkeeping, free of Temporal calls: work queue, batches in flight, grants
 * they have not yet acknowledged, and the governor. One serialisable object, so
 * continue-as-new carries all of it in one argument.
 */

export interface MonitorOptions {
  maxBatches: number;
  /** Complete the workflow once every chunk is finished (false: idle until stopped). */
  finishWhenDrained: boolean;
  /** Continue-as-new past this many history events even before the server suggests it. */
  maxHistoryEvents: number;
  maxAttempts: number;
  taskQueue?: string;
  /** Minimum interval between search-attribute updates (each is a history event). */
  searchAttributeIntervalMs: number;
  /** A source of at most this many URLs has its batch run by the monitor itself (monitor.ts; 0: never). */
  smallSourceUrls?: number;
}

export const DEFAULT_MONITOR_OPTIONS: MonitorOptions = {
  maxBatches: 4,
  finishWhenDrained: true,
  maxHistoryEvents: 10_000,
  maxAttempts: 3,
  searchAttributeIntervalMs: 15_000,
};

export interface BatchEntry {
  batchId: string;
  chunkId: string;
  urls: number;
  /** What the batch last said it holds without a slot. */
  unassigned: number;
  /** Grants sent to this batch so far (its grant sequence). */
  grantsSent: number;
  /** Slots of grants the batch had not yet seen at its last request: [grant seq, slots]. */
  unseen: [number, number][];
  /** Its chunk, to start the batch again should it be lost (lostBatches.ts); absent in state carried from before. */
  chunk?: WorkChunk;
  /** When the monitor last heard from it (any report or request), or started it. */
  heardMs?: number;
  /** Found ended without finishing its chunk, at this time: it is started again (lostBatches.ts). */
  lostMs?: number;
  /** Times it was started again. */
  revivals?: number;
  /** Its final outcomes counted so far, by class: a run started again reports only what its lost run recorded beyond them. */
  counted?: Partial<Record<OutcomeClass, number>>;
}

export interface MonitorState {
  source: string;
  governor: GovernorState;
  /** Work not started yet, in order: chunks and ranges of chunk files (see ChunkRange). */
  queue: WorkItem[];
  /** Ids of single chunks ever added (ranges are tracked in seenRanges). */
  seenChunkIds: string[];
  /** Chunk numbers of ranges ever added, per id prefix: sorted disjoint intervals. */
  seenRanges?: Record<string, Intervals>;
  batches: BatchEntry[];
  finishedBatches: number;
  totalUrls: number;
  finishedUrls: number;
  grantedSlots: number;
  unusedSlots: number;
  /** Slots that served no URL (see FetchBatchResult.missedSlots), in all and as a running share. */
  missedSlots: number;
  missRate: number;
  /**
   * The running share of sent requests that waited for a connection to the site (OutcomeReport.connectionWaits), and the worker's limit then
   * (of slots that passed, for a limit learnt or given: MonitorStats.connectionWaits); absent from states of older builds.
   */
  connectionWaits?: { share: number; perSite: number | null; learnt?: true; given?: true; starting?: true; refused?: true };
  /**
   * Per origin, the open downloads a worker last reported its site bears (OutcomeReport.openLimits),
   * and when: handed to the next grants so that every worker keeps to it from its first request.
   */
  openLimits?: Record<string, { limit: number; fastestMsPerMib: number; atMs: number }>;
  /**
   * Per origin, a site a worker holds for refusing requests beyond `limit` open (OutcomeReport.refusals),
   * until `untilMs` on the workflow's clock: handed to the next grants while it lasts.
   */
  refusals?: Record<string, { limit: number; untilMs: number; answerMs: number }>;
  /** When a grant last said the worker's own network looked down (OutcomeReport.networkDown); cleared by one that sent. */
  networkDownAtMs?: number;
  /** The latest grant report's share of URLs settled without a request (Grant.decidedShare); absent before the first. */
  decidedShare?: number;
  /** Images in a row that were one file (sameImage.ts); absent before the first image with a sha. */
  sameImage?: SameImageRun;
  alerts: string[];
  lastSearchAttributesMs: number;
  options: MonitorOptions;
}

export interface MonitorInput {
  source: string;
  config?: SourceConfig;
  work?: WorkItem[];
  options?: Partial<MonitorOptions>;
  governorConfig?: Partial<GovernorConfig>;
  /** Set by continue-as-new: everything the previous run knew. */
  carried?: MonitorState;
  /** The patch level of the code that started this run (workflows/patchLevel.ts); absent before levels. */
  patchLevel?: number;
}

/** How long a site's open-download limit, as a worker last reported it, goes to the next grants. */
const OPEN_LIMIT_KEPT_MS = 60 * 60_000;
/** A grant tells the quiet before its window (Grant.quietBeforeMs) up to this: a worker waits at most 5 s for another's requests. */
const QUIET_TOLD_MAX_MS = 60_000;
/** Sites whose open-download limits and refusal holds the monitor keeps: a source spans a few hosts. */
const MAX_SITES_KEPT = 16;

/**
 * The newest MAX_SITES_KEPT entries of a per-origin record (in insertion order: a site reported
 * again was deleted and set anew), the older dropped; undefined when it holds none.
 */
function newestSites<T>(kept: Record<string, T>): Record<string, T> | undefined {
  const origins = Object.keys(kept);
  for (const origin of origins.slice(0, Math.max(0, origins.length - MAX_SITES_KEPT))) delete kept[origin];
  return origins.length ? kept : undefined;
}

/** How long after a grant last reported a host paced by its own Crawl-delay the monitor still shows it (two of the longest windows). */
const HOST_CRAWL_DELAY_SHOWN_MS = 120_000;

/**
 * A report of the worker's network down is news for this long, unless a report that sent ends it
 * sooner: while the network is down, reports come only as grants' windows end (40 s, and longer
 * for a slow source), and the note must not blink off between them.
 */
const NETWORK_DOWN_SHOWN_MS = 5 * 60_000;

export function monitorWorkflowId(source: string): string {
  return `crawl-monitor:${source}`;
}

export class MonitorModel {
  readonly governor: Governor;

  constructor(public readonly state: MonitorState, governorConfig: GovernorConfig = DEFAULT_GOVERNOR) {
    this.governor = new Governor(state.governor, governorConfig);
  }

  static fromInput(input: MonitorInput, nowMs: number): MonitorModel {
    const governorConfig = governorConfigOf(input.governorConfig);
    if (input.carried) {
      const model = new MonitorModel(input.carried, governorConfig);
      if (input.work) model.addWork(input.work);
      return model;
    }
    const governor = Governor.create(input.source, input.config ?? {}, nowMs, governorConfig);
    const model = new MonitorModel(
      {
        source: input.source,
        governor: governor.state,
        queue: [],
        seenChunkIds: [],
        seenRanges: {},
        batches: [],
        finishedBatches: 0,
        totalUrls: 0,
        finishedUrls: 0,
        grantedSlots: 0,
        unusedSlots: 0,
        missedSlots: 0,
        missRate: 0,
        alerts: [],
        lastSearchAttributesMs: 0,
        options: { ...DEFAULT_MONITOR_OPTIONS, ...(input.options ?? {}) },
      },
      governorConfig,
    );
    model.addWork(input.work ?? []);
    return model;
  }

  /**
   * Queues what was not added before (adding the same work twice crawls it once); returns how
   * many chunks. `onRepeated` hears of each single chunk skipped because its id was added before.
   */
  addWork(items: readonly WorkItem[], onRepeated?: (chunkId: string) => void): number {
    let added = 0;
    for (const item of items) {
      if (isChunkRange(item)) {
        const seen = (this.state.seenRanges ??= {});
        for (const [first, last] of unseenParts(seen[item.idPrefix] ?? [], item.first, item.last)) {
          seen[item.idPrefix] = addInterval(seen[item.idPrefix] ?? [], first, last);
          const part = subRange(item, first, last);
          // Ranges that continue each other stay one entry: the queue does not grow with the source.
          appendRange(this.state.queue, part);
          this.state.totalUrls += rangeUrls(part);
          added += rangeChunks(part);
        }
        continue;
      }
      if (this.state.seenChunkIds.includes(item.chunkId)) {
        onRepeated?.(item.chunkId);
        continue;
      }
      this.state.seenChunkIds.push(item.chunkId);
      this.state.queue.push(item);
      this.state.totalUrls += item.count;
      added++;
    }
    return added;
  }

  /** Chunks to start as batches now, within the in-flight bound; not while paused or halted. */
  takeChunksToStart(): WorkChunk[] {
    const mode = this.state.governor.mode;
    if (mode !== 'running' && mode !== 'cooling') return [];
    const out: WorkChunk[] = [];
    const queue = this.state.queue;
    while (out.length < this.state.options.maxBatches - this.state.batches.length && queue.length > 0) {
      const head = queue[0]!;
      if (!isChunkRange(head)) {
        out.push(queue.shift() as WorkChunk);
      } else {
        out.push(chunkOf(head, head.first));
        if (head.first === head.last) queue.shift();
        else queue[0] = { ...head, first: head.first + 1 };
      }
    }
    return out;
  }

  queuedChunks(): number {
    return this.state.queue.reduce((n, item) => n + (isChunkRange(item) ? rangeChunks(item) : 1), 0);
  }

  /**
   * `asking`: the batch counts as asking for a slot for each of its URLs from the start (its first
   * grant is planned before it starts and rides in its input), instead of once its request comes.
   */
  batchStarted(batchId: string, chunk: WorkChunk, asking = false, nowMs?: number): void {
    this.state.batches.push({
      batchId, chunkId: chunk.chunkId, urls: chunk.count, unassigned: asking ? chunk.count : 0, grantsSent: 0, unseen: [],
      ...(nowMs !== undefined ? { chunk, heardMs: nowMs } : {}),
    });
  }

  batch(batchId: string): BatchEntry | undefined {
    return this.state.batches.find((x) => x.batchId === batchId);
  }

  /** The grant with `floatMs` of float when its window is the last planned (Governor.bookFloat), else as it is. */
  floatGrant(g: Grant, floatMs: number): Grant {
    return this.governor.bookFloat(g.endMs, floatMs) ? { ...g, floatMs } : g;
  }

  /**
   * A batch started `asking` turned out to exist already (adopted): it asks for itself, with its
   * own count of grants seen, so the ask made for it and the first grant planned with it are
   * taken back. The grant's window stays used on the timeline (nothing is sent in it).
   */
  withdrawAsk(batchId: string, grant?: Grant): void {
    const asked = this.state.batches.filter((x) => x.batchId === batchId).at(-1);
    if (asked) asked.unassigned = 0;
    if (!grant) return;
    // planGrants counted the grant on the first entry of that id.
    const b = this.batch(batchId);
    if (!b) return;
    b.grantsSent -= 1;
    b.unseen = b.unseen.filter(([seq]) => seq <= b.grantsSent);
    this.state.grantedSlots -= grant.slots;
  }

  /** A worker's judgements replace what the monitor held for those sites; a site found to bear any number is forgotten. */
  private noteOpenLimits(reported: Record<string, OpenLimitHint>, nowMs: number): void {
    const kept = { ...this.state.openLimits };
    for (const [origin, hint] of Object.entries(reported)) {
      delete kept[origin];
      if (hint.limit !== null) kept[origin] = { limit: hint.limit, fastestMsPerMib: hint.fastestMsPerMib, atMs: nowMs };
    }
    const newest = newestSites(kept);
    if (newest) this.state.openLimits = newest;
    else delete this.state.openLimits;
  }

  /** A worker's holds replace what the monitor held for those sites; the newest few are kept. */
  private noteRefusals(reported: Record<string, RefusalHint>, nowMs: number): void {
    const kept = { ...this.state.refusals };
    for (const [origin, { limit, forMs, answerMs }] of Object.entries(reported)) {
      delete kept[origin];
      kept[origin] = { limit, untilMs: nowMs + forMs, answerMs };
    }
    const newest = newestSites(kept);
    if (newest) this.state.refusals = newest;
    else delete this.state.refusals;
  }

  /** The holds the next grants carry, for what is left of each; those over are forgotten. */
  private refusalsNow(nowMs: number): Record<string, RefusalHint> | undefined {
    let now: Record<string, RefusalHint> | undefined;
    for (const [origin, { limit, untilMs, answerMs }] of Object.entries(this.state.refusals ?? {})) {
      if (untilMs > nowMs) (now ??= {})[origin] = { limit, forMs: untilMs - nowMs, answerMs };
      else delete this.state.refusals![origin];
    }
    if (!now) delete this.state.refusals;
    return now;
  }

  /**
   * The limits the next grants carry: those heard of within the hour. A link's load changes, and
   * a worker taking an old limit up would spend minutes probing its way back up from it.
   */
  private openLimitsNow(nowMs: number): Record<string, OpenLimitHint> | undefined {
    let now: Record<string, OpenLimitHint> | undefined;
    for (const [origin, { limit, fastestMsPerMib, atMs }] of Object.entries(this.state.openLimits ?? {})) {
      if (nowMs - atMs <= OPEN_LIMIT_KEPT_MS) (now ??= {})[origin] = { limit, fastestMsPerMib };
    }
    return now;
  }

  private openLimitsShown(nowMs: number): { openLimits?: Record<string, number> } {
    const now = this.openLimitsNow(nowMs);
    return now ? { openLimits: Object.fromEntries(Object.entries(now).map(([origin, h]) => [origin, h.limit!])) } : {};
  }

  onTokenRequest(req: TokenRequest): void {
    const b = this.batch(req.batchId);
    if (!b) return;
    b.unassigned = req.unassigned;
    b.unseen = b.unseen.filter(([seq]) => seq > req.grantsSeen);
  }

  /** `policy`: Governor.applyReport's options (what the monitor's patches leave in effect). */
  onReport(report: OutcomeReport, nowMs: number, policy: ReportPolicy = {}): PolicyEvent[] {
    this.state.unusedSlots += report.unused;
    // A grant whose requests could not leave for the worker's own network says nothing of how
    // busy the worker is: counted, its misses read "workers behind: 59%" for minutes after the
    // network was back and the source at its full rate again, and stretched its windows.
    if (report.missedSlots !== undefined) {
      this.state.missedSlots += report.missedSlots;
      // Slots that served a URL: outcomes settled without a request (report.decided) took none.
      const served = Math.max(0, report.outcomes.length - (report.decided?.decided ?? 0));
      if (!report.networkDown) this.state.missRate = updateMissRate(this.state.missRate, report.missedSlots, served);
    }
    const sent = report.outcomes.reduce((n, o) => n + (o.sent ? 1 : 0), 0);
    if (sent > 0 || report.connectionWaits) {
      const waits = this.state.connectionWaits;
      this.state.connectionWaits = {
        // The same running average as the miss rate's: of the requests sent, the share that waited.
        // Of a site held to a limit (learnt, or its maxConnections), the share of its slots that passed for it.
        share: report.connectionWaits?.learnt || report.connectionWaits?.given
          ? updateMissRate(waits?.share ?? 0, report.connectionWaits.requests, sent)
          : updateMissRate(waits?.share ?? 0, Math.min(sent, report.connectionWaits?.requests ?? 0), sent - Math.min(sent, report.connectionWaits?.requests ?? 0)),
        perSite: report.connectionWaits?.perSite ?? waits?.perSite ?? null,
        ...((report.connectionWaits ? report.connectionWaits.learnt : waits?.learnt) ? { learnt: true as const } : {}),
        ...((report.connectionWaits ? report.connectionWaits.given : waits?.given) ? { given: true as const } : {}),
        ...((report.connectionWaits ? report.connectionWaits.learnt && report.connectionWaits.starting : waits?.starting) ? { starting: true as const } : {}),
        ...((report.connectionWaits ? report.connectionWaits.learnt && report.connectionWaits.refused : waits?.refused) ? { refused: true as const } : {}),
      };
    }
    if (report.openLimits) this.noteOpenLimits(report.openLimits, nowMs);
    if (report.refusals) this.noteRefusals(report.refusals, nowMs);
    if (report.networkDown) this.state.networkDownAtMs = nowMs;
    else if (report.outcomes.some((o) => o.sent)) this.state.networkDownAtMs = undefined;
    if (report.tokens) this.onTokenRequest({ batchId: report.batchId, ...report.tokens });
    const b = this.batch(report.batchId);
    if (b) for (const o of report.outcomes) if (o.final) (b.counted ??= {})[o.cls] = (b.counted[o.cls] ?? 0) + 1;
    for (const o of report.outcomes) {
      const same = nextSameImage(this.state.sameImage, o);
      if (same) this.state.sameImage = same;
    }
    // The latest grant's share, so a site that stops ruling URLs out (a new chunk on another path) stops the extra ones.
    if (report.decided && report.decided.items > 0) this.state.decidedShare = report.decided.decided / report.decided.items;
    return this.governor.applyReport(report, nowMs, policy);
  }

  onBatchFinished(done: BatchFinished): void {
    const i = this.state.batches.findIndex((x) => x.batchId === done.batchId);
    if (i < 0) return;
    this.state.batches.splice(i, 1);
    this.governor.batchEnded(done.batchId);
    this.state.finishedBatches += 1;
    this.state.finishedUrls += done.urls;
  }

  /**
   * Batches that may be using a grant now: none once the last window granted has ended. A
   * source that stops granting revokes theirs (revokeGrantsSignal).
   */
  batchesWithOpenGrants(nowMs: number): string[] {
    if (this.state.governor.pacer.nextFreeMs <= nowMs) return [];
    return this.state.batches.filter((b) => b.grantsSent > 0).map((b) => b.batchId);
  }

  /** Takes every batch in flight off the books and names them: a stopped crawl cancels them. */
  takeBatchesToCancel(): string[] {
    const ids = this.state.batches.map((b) => b.batchId);
    this.state.batches = [];
    return ids;
  }

  wants(): { batchId: string; wanted: number }[] {
    return this.state.batches.map((b) => ({
      batchId: b.batchId,
      wanted: Math.max(0, b.unassigned - b.unseen.reduce((s, [, slots]) => s + slots, 0)),
    }));
  }

  /**
   * Plans the next window when it is due and someone wants slots; `shortFirst`: see Governor.plan.
   * `tailSlack`: asked only when the window would be the source's last (one batch wants slots, no
   * chunk is waiting); true gives that grant spare slots for a late start (tailGrantSlots).
   * `wholeIfFits`: asked only for a short first window whose source's work all fits in one usual
   * window (Governor.fitsInOneWindow); true grants it all in that one window instead.
   */
  planGrants(nowMs: number, shortFirst = false, tailSlack?: () => boolean, wholeIfFits?: () => boolean, holdersFirst?: () => boolean): Grant[] {
    if (nowMs < this.governor.nextPlanAtMs()) return [];
    const missRate = this.state.missRate;
    const share = this.state.decidedShare;
    const wanting = this.wants().filter((w) => w.wanted > 0).map((w) => ({ batchId: w.batchId, needed: slotsNeeded(w.wanted, share) }));
    if (wanting.length === 0) return [];
    const last = wanting.length === 1 && this.state.queue.length === 0 && tailSlack?.() === true;
    // Capped to a host's Crawl-delay by batches that hold only its URLs: they get the windows.
    // The others' hosts would go no faster than the cap anyway, and once the holders are done
    // the cap is lifted for them (Governor.liftCrawlDelay); shared, the delayed host got a
    // quarter of its pace with four batches and kept the whole source capped four times as long.
    // A window for the others is short (PROBE_WINDOW_MS), since its report may lift the cap: a
    // batch of another host's URLs waited out a 40 s window at the capped rate, then another
    // planned before that report came (80 s at 1/s after the delayed host's chunk was done).
    const holders = this.state.governor.siteMaxRate !== undefined ? this.state.governor.crawlDelayHolders : undefined;
    const holding = wanting.filter((w) => holders?.includes(w.batchId));
    const lane = holders !== undefined && holding.length < wanting.length && holdersFirst?.() === true;
    const needs = lane && holding.length > 0 ? holding : wanting;
    const probe = lane && holding.length === 0;
    const wants = needs.map(({ batchId, needed }) => ({
      batchId,
      wanted: Math.max(slotsWithMissAllowance(needed, missRate), last ? tailGrantSlots(needed, this.governor.slotIntervalMs(), this.governor.leadMs()) : 0),
    }));
    // The batch fills every slot it has a URL for. Spare slots kept empty for misses would
    // leave the source idle whenever the worker keeps up after all (at a 10% miss rate, 4 s of
    // every 40 s window at 1 req/s), so only a batch's last window has empty ones. A last window
    // opens after the configured lead, not the learnt one: its spares absorb a late start, and
    // the learnt lead only kept the source idle when the trip was quicker than it (measured: a
    // last grant's activity waited 5.4 s for a window 7.4 s after its issue).
    const lead = last ? this.governor.cfg.grantLeadMs : undefined;
    const stretch = windowStretch(missRate);
    const whole = shortFirst && last && this.governor.fitsInOneWindow(wants[0]!.wanted, stretch) && wholeIfFits?.() === true;
    const bookedUntilMs = this.state.governor.pacer.nextFreeMs;
    const planned = this.governor.plan(wants, nowMs, stretch, shortFirst && !whole, lead, probe);
    // A batch puts this much more than a URL per slot into its first grant (grantItemCount).
    const { maxRetryAfterMs } = this.governor.cfg.adaptive;
    const { maxConnections } = this.governor.state.sourceConfig;
    const openLimits = this.openLimitsNow(nowMs);
    const refusals = this.refusalsNow(nowMs);
    const extra = {
      ...(share ? { decidedShare: share } : {}),
      ...(maxRetryAfterMs !== DEFAULT_ADAPTIVE.maxRetryAfterMs ? { maxRetryAfterMs } : {}),
      ...(maxConnections !== undefined ? { maxConnections } : {}),
      ...(openLimits ? { openLimits } : {}),
      ...(refusals ? { refusals } : {}),
    };
    const grants: Grant[] = Object.keys(extra).length ? planned.map((g) => ({ ...g, ...extra })) : planned;
    // Only the window's first grant can follow a quiet stretch: the others follow it directly.
    const first = grants[0];
    if (refusals && first) {
      const quietMs = bookedUntilMs > 0 ? first.startMs - bookedUntilMs : Infinity;
      if (quietMs > 0) grants[0] = { ...first, quietBeforeMs: Math.round(Math.min(quietMs, QUIET_TOLD_MAX_MS)) };
    }
    for (const g of grants) {
      const b = this.batch(g.batchId)!;
      b.grantsSent += 1;
      b.unseen.push([b.grantsSent, g.slots]);
      this.state.grantedSlots += g.slots;
    }
    return grants;
  }

  /** When the loop must wake even without a message; `watched`: also to look after these batches (lostBatches.ts). */
  nextWakeMs(nowMs: number, watched?: readonly BatchEntry[]): number | undefined {
    const times: number[] = [];
    const watchAt = watched && this.watchingBatches() ? nextWatchMs(watched) : undefined;
    if (watchAt !== undefined) times.push(watchAt);
    const timed = this.governor.nextTimedChangeMs(nowMs);
    if (timed !== undefined) times.push(timed);
    if (this.wants().some((w) => w.wanted > 0) && this.governor.canGrant(nowMs)) times.push(this.governor.nextPlanAtMs());
    if (this.state.governor.mode === 'running' && this.governor.rate < this.state.governor.target) {
      times.push(nowMs + 5_000); // keep ramping while below target
    }
    const future = times.map((t) => Math.max(t, nowMs + 1));
    return future.length ? Math.min(...future) : undefined;
  }

  /** Lost batches are looked for and started again only while the source is crawled: not while it is paused or halted. */
  watchingBatches(): boolean {
    const mode = this.state.governor.mode;
    return mode === 'running' || mode === 'cooling';
  }

  drained(): boolean {
    return this.state.queue.length === 0 && this.state.batches.length === 0;
  }

  alert(message: string, nowMs: number): void {
    this.state.alerts.push(`${new Date(nowMs).toISOString()} ${message}`);
    if (this.state.alerts.length > 10) this.state.alerts.shift();
  }

  /**
   * URLs with their final outcome. Batches report outcomes after every grant but finish only
   * with their last URL (500 to a chunk): counting finished batches alone kept progress at 0%
   * for minutes at low rates.
   */
  finishedUrls(): number {
    const c = this.state.governor.counts;
    const final = c.done + c.linkrot + c.robots + c.content + c.refused + c.error;
    return Math.max(this.state.finishedUrls, Math.min(final, this.state.totalUrls));
  }

  private slowed(): MonitorStats['slowed'] {
    const g = this.state.governor;
    const a = g.adaptive;
    if (g.mode !== 'running' || !g.slowedBy || a.rate >= g.target * 0.999) return null;
    // The ramp adds target/rampSeconds a second, from the later of its last step and the hold's end.
    const backMs = Math.max(a.lastRampMs, a.holdUntilMs) + ((g.target - a.rate) / g.target) * this.governor.cfg.adaptive.rampSeconds * 1000;
    return { by: g.slowedBy.by, at: new Date(g.slowedBy.atMs).toISOString(), backAt: new Date(Math.ceil(backMs / 1000) * 1000).toISOString() };
  }

  stats(nowMs: number): MonitorStats {
    const g = this.state.governor;
    const breakerWindow = windowCounts(g.breaker, nowMs, this.governor.cfg.breaker);
    const heldUntil = g.adaptive.holdUntilMs > nowMs ? new Date(g.adaptive.holdUntilMs).toISOString() : null;
    return {
      source: g.source,
      state: g.mode,
      rate: round(g.adaptive.rate),
      target: round(g.target),
      maxRate: this.governor.cfg.globalCeiling ?? null,
      maxRetryAfterS: this.governor.cfg.adaptive.maxRetryAfterMs / 1000,
      ...(g.sourceConfig.maxConnections !== undefined ? { maxConnections: g.sourceConfig.maxConnections } : {}),
      siteMaxRate: g.siteMaxRate !== undefined ? round(g.siteMaxRate) : null,
      burst: g.burst,
      ceilingPerSecond: ceilings(g.adaptive.rate, g.burst).perSecond,
      retryAfterUntil: (g.adaptive.holdReason ?? 'retry-after') === 'retry-after' ? heldUntil : null,
      crawlDelayUntil: g.adaptive.holdReason === 'crawl-delay' ? heldUntil : null,
      quotaUntil: g.adaptive.holdReason === 'quota' ? heldUntil : null,
      quotaLimit: g.adaptive.holdReason === 'quota' && heldUntil ? g.quotaLimit ?? null : null,
      quotaPace: this.governor.quotaPace(),
      robotsRetryAt: g.adaptive.holdReason === 'robots' ? heldUntil : null,
      robotsError: g.adaptive.holdReason === 'robots' && heldUntil ? g.robotsError ?? null : null,
      robotsHostWait: g.robotsHostWait && g.robotsHostWait.untilMs > nowMs ? { error: g.robotsHostWait.error, until: new Date(g.robotsHostWait.untilMs).toISOString() } : null,
      hostCrawlDelay: g.hostCrawlDelay && g.siteMaxRate === undefined && nowMs - g.hostCrawlDelay.atMs <= HOST_CRAWL_DELAY_SHOWN_MS ? { origin: g.hostCrawlDelay.origin, delayS: g.hostCrawlDelay.delayMs / 1000 } : null,
      storeRetryAt: g.adaptive.holdReason === 'store' ? heldUntil : null,
      storeError: g.adaptive.holdReason === 'store' && heldUntil ? g.storeError ?? null : null,
      networkDownAt: this.state.networkDownAtMs !== undefined && nowMs - this.state.networkDownAtMs <= NETWORK_DOWN_SHOWN_MS ? new Date(this.state.networkDownAtMs).toISOString() : null,
      // Also while paused during one: the temporary halt goes on when the operator resumes.
      coolingUntil: g.mode === 'cooling' || (g.mode === 'paused' && g.pausedWhileCooling && g.coolingUntilMs > nowMs) ? new Date(g.coolingUntilMs).toISOString() : null,
      haltReason: g.haltReason,
      slowed: this.slowed(),
      counts: { ...g.counts },
      pages: g.pages ?? 0,
      contentBefore: g.contentBefore ?? 0,
      urls: {
        total: this.state.totalUrls,
        finished: this.finishedUrls(),
        queuedChunks: this.queuedChunks(),
        inBatches: this.state.batches.reduce((s, b) => s + b.urls, 0),
      },
      batches: { active: this.state.batches.length, finished: this.state.finishedBatches, lost: this.state.batches.filter((b) => b.lostMs !== undefined).length },
      tokens: {
        granted: this.state.grantedSlots,
        unused: this.state.unusedSlots,
        missed: this.state.missedSlots,
        missRate: Math.round(this.state.missRate * 100) / 100,
        wanted: this.wants().reduce((s, w) => s + w.wanted, 0),
        nextWindowAt: g.pacer.nextFreeMs > 0 ? new Date(g.pacer.nextFreeMs).toISOString() : null,
        leadMs: Math.round(this.governor.leadMs()),
      },
      connectionWaits: {
        share: Math.round((this.state.connectionWaits?.share ?? 0) * 100) / 100,
        perSite: this.state.connectionWaits?.perSite ?? null,
        ...(this.state.connectionWaits?.learnt ? { learnt: true as const } : {}),
        ...(this.state.connectionWaits?.given ? { given: true as const } : {}),
        ...(this.state.connectionWaits?.starting ? { starting: true as const } : {}),
        ...(this.state.connectionWaits?.refused ? { refused: true as const } : {}),
      },
      ...this.openLimitsShown(nowMs),
      breaker: {
        windowRequests: breakerWindow.requests,
        windowErrors: breakerWindow.errors,
        consecutiveErrors: g.breaker.consecutiveErrors,
        last50: g.breaker.last,
      },
      latency: {
        baselineMs: g.latency.baselineMs === null ? null : Math.round(g.latency.baselineMs),
        recentMedianMs: g.latency.recent.length ? median(g.latency.recent) : null,
      },
      sameImage: this.state.sameImage ? { ...this.state.sameImage } : null,
      alerts: [...this.state.alerts],
    };
  }
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/**
 * The defaults with what the start input sets. Nested parts merge field by field: a Temporal
 * CLI start that sets `{"adaptive": {"maxRetryAfterMs": 60000}}` alone must not leave the other
 * adaptive settings undefined. A longest Retry-After that is no usable number keeps the default.
 */
export function governorConfigOf(given: Partial<GovernorConfig> = {}): GovernorConfig {
  const adaptive = { ...DEFAULT_GOVERNOR.adaptive, ...given.adaptive };
  if (typeof adaptive.maxRetryAfterMs !== 'number' || !(adaptive.maxRetryAfterMs >= 1_000)) adaptive.maxRetryAfterMs = DEFAULT_GOVERNOR.adaptive.maxRetryAfterMs;
  return {
    ...DEFAULT_GOVERNOR, ...given,
    adaptive,
    breaker: { ...DEFAULT_GOVERNOR.breaker, ...given.breaker },
    latency: { ...DEFAULT_GOVERNOR.latency, ...given.latency },
  };
}

/** What a monitor shows in its search attributes now. */
export function shownOf(m: MonitorModel, state?: string): MonitorShown {
  const g = m.state.governor;
  return { source: g.source, state: state ?? g.mode, rate: g.adaptive.rate, done: g.counts.done, errors: g.counts.error };
}
