import {
  ActivityCancellationType, ActivityFailure, ApplicationFailure, CancellationScope, getExternalWorkflowHandle, isCancellation, log, proxyActivities, proxyLocalActivities,
  setHandler, condition, sleep, workflowInfo, type SignalDefinition,
} from '@temporalio/workflow';
import { grantItemCount } from '../shared/grantItems';
import { FailedUrls } from '../politeness/repeatFailures';
import { floatGrant } from '../politeness/pacing';
import { batchRunUnit, recordFile } from '../shared/recordUnits';
import type { CrawlActivities } from '../activities/crawlActivities';
import { HEARTBEAT_TIMEOUT_MS } from '../shared/heartbeat';
import { CHUNK_UNREADABLE, STORE_RETRY_MS, STORE_UNAVAILABLE } from '../shared/storeOutage';
import type { BatchItem, FetchBatchResult, Grant, OutcomeClass, RedirectHop, RequestOutcome, WorkChunk } from '../shared/types';
import { batchFinishedSignal, batchStoppedSignal, grantSignal, pingSignal, reportOutcomesSignal, requestTokensSignal, revokeGrantsSignal } from './messages';
import { patchesOf } from './patchLevel';

/**
 * A batch owns a bounded list of URLs. It asks its monitor for slots, runs the fetch activity
 * for exactly the granted URLs inside the grant's window, reports every outcome back, and puts
 * retryable and unused URLs back in its queue for a later grant. It never sends on its own.
 */

export interface BatchInput {
  source: string;
  monitorId: string;
  chunk: WorkChunk;
  maxAttempts: number;
  /** The patch level of the code that started the batch (workflows/patchLevel.ts); absent before levels. */
  patchLevel?: number;
  /**
   * The monitor counts every URL of the chunk as asking for a slot from the start (patch
   * first-grant-with-start): the batch asks only once what it needs differs from that.
   */
  asked?: boolean;
  /** The first grant, planned when the monitor started the batch. */
  firstGrant?: Grant;
  /**
   * Started again by its monitor after a run of it ended without finishing (lostBatches.ts), with
   * the final outcomes the monitor counted of it by class: of what earlier runs recorded, only
   * the rest is reported (a run terminated mid-grant records what it had fetched, unreported).
   */
  revived?: { counted: Partial<Record<OutcomeClass, number>> };
}

export interface BatchResult {
  batchId: string;
  counts: Partial<Record<OutcomeClass, number>>;
  urls: number;
}

// Store calls, retried for as long as the store is down: with a limit of ten attempts a store
// outage of ~7 minutes failed the batch, and its monitor did not complete (test/monitor:
// "waits for a store that takes longer than ten tries"). The Web UI shows the pending activity
// with its attempt count and last failure meanwhile.
const bookkeepingOptions = {
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
} as const;
const remoteBookkeeping = proxyActivities<CrawlActivities>(bookkeepingOptions);
/**
 * Reading the chunk, listing what earlier runs recorded and leaving the done-marker are short
 * store calls. As local activities they run inside the batch's workflow task: one marker event
 * each instead of three events and a workflow task of their own, and no trip through the task
 * queue, which takes seconds on a worker busy with many small sources (1,000 sources of 3 URLs:
 * 2-4 s per workflow task).
 */
const bookkeeping = {
  remote: remoteBookkeeping,
  local: proxyLocalActivities<CrawlActivities>(bookkeepingOptions),
};

// How long a single request may take after its slot (the fetch's own total timeout is less).
const REQUEST_TAIL_MS = 120_000;

/** A floating grant's first slot is at least this far ahead when the batch takes it: the activity's trip through the task queue. */
const FLOAT_LEAD_MS = 300;

/** Tries of a signal to the monitor before the batch gives up (waits of 1 s doubling to a minute: about 6 minutes). */
const SIGNAL_TRIES = 12;

/**
 * Signals the monitor, trying again while it cannot be found: a monitor is briefly between runs
 * when it continues-as-new (the likeliest cause of a batch that failed in one test run, leaving
 * its monitor waiting for it for ever; not confirmed). A report that did not arrive would leave
 * the monitor's view of the batch wrong, so the batch waits and sends it again rather than failing.
 */
async function signalMonitor<T extends unknown[]>(monitorId: string, def: SignalDefinition<T>, ...args: T): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await getExternalWorkflowHandle(monitorId).signal(def, ...args);
      return;
    } catch (err) {
      if (attempt >= SIGNAL_TRIES) throw err;
      log.warn('monitor not reachable; signalling again', { monitorId, signal: def.name, attempt, error: String((err as Error).message ?? err) });
      await sleep(Math.min(60_000, 1_000 * 2 ** (attempt - 1)));
    }
  }
}

/**
 * How a batch and its monitor reach each other: signals for a batch that is a child workflow,
 * calls within the workflow for one its monitor runs itself (monitor.ts: a small source).
 */
export interface MonitorLink {
  /** Delivers a message to the monitor, trying again while it cannot be reached. */
  send<T extends unknown[]>(def: SignalDefinition<T>, ...args: T): Promise<void>;
  /** Delivers a message once, without retries: a monitor that no longer listens has completed. */
  sendOnce<T extends unknown[]>(def: SignalDefinition<T>, ...args: T): Promise<void>;
  /** Where the monitor's grants and revocations reach the batch from now on. */
  listen(handlers: { grant(g: Grant): void; revoke(reason: string): void }): void;
}

/** What a run of a batch is: its id, its run (record files are per run), and where its activities go. */
export interface BatchRun {
  batchId: string;
  runId: string;
  link: MonitorLink;
  /** The task queue of its activities; by default the workflow's own. */
  taskQueue?: string;
}

/** The link of a batch that is a child workflow: signals by the monitor's workflow id. */
function signalLink(monitorId: string): MonitorLink {
  return {
    send: (def, ...args) => signalMonitor(monitorId, def, ...args),
    sendOnce: (def, ...args) => getExternalWorkflowHandle(monitorId).signal(def, ...args).catch(() => undefined),
    listen: ({ grant, revoke }) => {
      setHandler(pingSignal, () => undefined);
      setHandler(grantSignal, grant);
      setHandler(revokeGrantsSignal, ({ reason }) => revoke(reason));
    },
  };
}

/** A fetch activity's one-line label: its grant, URLs and pace. */
function grantSummary(g: Grant, urls: number): string {
  const label = `grant ${g.grantId}: ${urls} URL${urls === 1 ? '' : 's'}`;
  if (!(g.intervalMs > 0)) return label;
  const perS = 1000 / g.intervalMs;
  return `${label} at ${perS >= 10 ? Math.round(perS) : Math.round(perS * 10) / 10}/s`;
}

export async function crawlBatchWorkflow(input: BatchInput): Promise<BatchResult> {
  const info = workflowInfo();
  return runBatch(input, { batchId: info.workflowId, runId: info.runId, link: signalLink(input.monitorId) });
}

/** The batch's work, in whichever workflow runs it (see MonitorLink). */
export async function runBatch(input: BatchInput, run: BatchRun): Promise<BatchResult> {
  const { batchId, link } = run;
  const patched = patchesOf(input.patchLevel);
  // Cancelled (its crawl was stopped), a batch ends only once its fetch activities have: one
  // learns of the cancellation at its next heartbeat and records what it finished by then. Had
  // the batch ended at once, a crawl started again within those seconds could fetch and record
  // a second time what that activity was still finishing.
  const waitsForFetches = patched('batch-waits-for-fetches-on-cancel');
  const stopping = () => waitsForFetches && CancellationScope.current().consideredCancelled;
  /** Fetch activities under way. */
  let running = 0;
  const remote = run.taskQueue ? proxyActivities<CrawlActivities>({ ...bookkeepingOptions, taskQueue: run.taskQueue }) : bookkeeping.remote;
  const { recordFinal } = remote;
  const { loadChunk, recordedUrls, chunkWork, markChunkDone } = patched('batch-bookkeeping-local-activities') ? bookkeeping.local : remote;
  try {
    // A chunk file the workers' store does not have: the source is held, as for a failing store
    // (`crawl status` says why), and the chunk read again until it is there. Before, the batch
    // failed and its monitor waited for it for ever, showing nothing. Only a read that failed
    // takes this path, and such a history had ended, so no patch is needed.
    const readable = async <T>(read: () => Promise<T>): Promise<T> => {
      for (;;) {
        try {
          return await read();
        } catch (err) {
          // A local activity's failure comes as itself, not wrapped in an ActivityFailure.
          const failure = err instanceof ActivityFailure ? err.cause : err;
          if (!(failure instanceof ApplicationFailure && failure.type === CHUNK_UNREADABLE)) throw err;
          log.warn('chunk unreadable; the source is held and the chunk read again', { batchId, error: failure.message });
          await link.send(reportOutcomesSignal, { batchId, grantId: 0, outcomes: [], unused: 0, storeRetryMs: STORE_RETRY_MS, storeError: failure.message });
          await sleep(STORE_RETRY_MS);
        }
      }
    };
    // The chunk and what earlier runs recorded of it, in one local activity (one marker event).
    // (A history without a patch level asked for record-units-by-batch-run after loading the
    // chunk: it still does, below.)
    const work = patched('chunk-work-in-one-local-activity')
      ? await readable(() => chunkWork({ source: input.source, chunk: input.chunk, recorded: patched('record-units-by-batch-run') }))
      : undefined;
    const urls = input.chunk.urls ?? work?.urls ?? (await loadChunk(input.chunk));
    const markerWithLastFetch = patched('done-marker-with-last-fetch');
    /** Only a spooled chunk has a done-marker; one given inline made the local activity a no-op (an event all the same). */
    const markChunkDoneIfAny = async () => {
      if (input.chunk.spool !== undefined || !markerWithLastFetch) await markChunkDone(input.chunk);
    };
    const attempts = urls.map(() => 0);
    const failedBefore = new FailedUrls();
    const finals: (OutcomeClass | null)[] = urls.map(() => null);
    /** Where a URL's redirects had got to when its last grant ran out of slots. */
    const hops: (RedirectHop | undefined)[] = urls.map(() => undefined);
    // Record files of this run of the chunk's batch. Batches started before there were runs in
    // the name keep writing under the batch id (same files as their earlier attempts).
    const byRun = patched('record-units-by-batch-run');
    const unit = byRun ? batchRunUnit(input.chunk.chunkId, run.runId) : undefined;
    // A chunk crawled again after its crawl was stopped: what an earlier run recorded is done.
    const recorded = new Map((work ? work.recorded : byRun ? await recordedUrls({ source: input.source, chunkId: input.chunk.chunkId }) : []).map((r) => [r.url, r.outcome]));
    urls.forEach((url, i) => { finals[i] = recorded.get(url) ?? null; });
    const pending: number[] = urls.flatMap((_, i) => (finals[i] === null ? [i] : []));
    let remaining = pending.length;
    const grants: Grant[] = input.firstGrant ? [input.firstGrant] : [];
    let grantsSeen = grants.length;
    /** What the monitor must know of us: a request is sent only when this changed. */
    const askFor = (unassigned: number) => `${unassigned}/${grantsSeen}`;
    const ask = () => askFor(pending.length);
    // Started asking for the whole chunk, the batch has asked already, unless an earlier run recorded some of it.
    let lastAsk: string | null = input.asked ? askFor(input.chunk.count) : null;
    /** The token request as of now; remembered so the main loop does not send it again. */
    const tokens = () => {
      lastAsk = ask();
      return { unassigned: pending.length, grantsSeen };
    };

    /** Scopes of the fetch activities under way, by grant: a revoke cancels them. */
    const grantScopes = new Map<number, CancellationScope>();
    /** Grants revoked before they were acted on: handed back unused. */
    const revokedUnstarted: Grant[] = [];
    link.listen({
      grant: (g) => {
        grants.push(g);
        grantsSeen += 1;
      },
      // The monitor stopped granting: its grants are void. An activity learns of its cancellation
      // at its next heartbeat, stops sending and returns what it did and what it did not send.
      // Only batches whose activities can be waited for (the cancellation type below): an older
      // one would lose the grant's outcomes.
      revoke: (reason) => {
        if (!waitsForFetches) return;
        if (grantScopes.size > 0 || grants.length > 0) log.info('grants revoked', { batchId, reason, running: grantScopes.size, unstarted: grants.length });
        revokedUnstarted.push(...grants.splice(0));
        for (const scope of grantScopes.values()) scope.cancel();
      },
    });

    /** The done-marker is written and the monitor told, with the last grant's report. */
    let finishReported = false;
    /**
     * URLs that went back because their host's Crawl-delay kept them waiting (a source spanning
     * hosts), and the strictest such delay reported. Put back at the end of `pending`, they went
     * only after every other host's URL of the chunk: in a chunk listing one host's URLs first,
     * those waited until the other hosts were done and then went at one per delay, the whole
     * source capped to it (60 + 540 URLs at 10/s, Crawl-delay 1: 60 s of the others, then 50 s).
     */
    const hostWaited = new Set<number>();
    let hostWaitMs = 0;
    /**
     * A grant's URLs: `count` from the front of the queue, and with them as many URLs waiting for
     * a host's Crawl-delay as the window can serve at that pace (one a delay, and one more), so
     * they go alongside the other hosts' instead of after them. Once only waiting URLs are left,
     * the grant takes them as any (the activity then asks the monitor to cap the source).
     */
    const takeForGrant = (g: Grant, count: number): number[] => {
      if (hostWaited.size === 0 || hostWaitMs <= 0 || !patched('spread-host-waited-urls')) return pending.splice(0, count);
      const others = pending.filter((i) => !hostWaited.has(i)).slice(0, count);
      if (others.length === 0) return pending.splice(0, count);
      const perWindow = Math.floor((g.endMs + (g.floatMs ?? 0) - g.startMs) / hostWaitMs) + 1;
      const waiting = pending.filter((i) => hostWaited.has(i)).slice(0, perWindow);
      const taken = new Set([...waiting, ...others]);
      const rest = pending.filter((i) => !taken.has(i));
      pending.splice(0, pending.length, ...rest);
      return [...waiting, ...others];
    };

    /** The latest grant's URLs and how many of them needed no request (see grantItemCount). */
    let lastGrant: { items: number; decided: number } | undefined;

    /** A grant of which `unused` slots served nothing goes back: the monitor re-plans them. */
    const handBack = (g: Grant, unused: number) =>
      link.send(reportOutcomesSignal, { batchId, grantId: g.grantId, outcomes: [], unused, tokens: tokens() });

    const finish = (index: number, cls: OutcomeClass) => {
      if (finals[index] !== null) return;
      finals[index] = cls;
      remaining -= 1;
    };

    async function runGrant(g: Grant, indices: number[]): Promise<void> {
      const items: BatchItem[] = indices.map((i) => ({
        url: urls[i]!, attempt: attempts[i]! + 1, ...(hops[i] ? { hop: hops[i] } : {}),
        ...(failedBefore.has(i) && patched('mark-repeat-failures') ? { failedBefore: true as const } : {}),
      }));
      const byUrl = new Map(indices.map((i) => [urls[i]!, i]));
      // Everything the chunk has left is in this grant: if it all ends, the activity leaves the
      // done-marker (a chunk given inline has none to leave).
      const mayFinish = remaining === indices.length && pending.length === 0 && running === 1 && input.chunk.spool !== undefined && markerWithLastFetch;
      const { fetchBatch } = proxyActivities<CrawlActivities>({
        ...(run.taskQueue ? { taskQueue: run.taskQueue } : {}),
        startToCloseTimeout: Math.max(1_000, g.endMs - Date.now()) + REQUEST_TAIL_MS,
        heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
        ...(waitsForFetches ? { cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED } : {}),
        // What the Web UI's timeline and pending activities label it with (its id is a bare number).
        summary: grantSummary(g, items.length),
        // A retried attempt resumes from its heartbeat and still only sends inside the window.
        retry: { maximumAttempts: 3, initialInterval: '1 second', nonRetryableErrorTypes: ['InvalidInput'] },
      });
      let result: FetchBatchResult;
      const scope = new CancellationScope();
      grantScopes.set(g.grantId, scope);
      try {
        result = await scope.run(() => fetchBatch({
          source: input.source, batchId, ...(unit ? { unit } : {}), grantId: g.grantId, items, maxAttempts: input.maxAttempts,
          ...(g.maxRetryAfterMs !== undefined ? { maxRetryAfterMs: g.maxRetryAfterMs } : {}),
          ...(g.maxConnections !== undefined ? { maxConnections: g.maxConnections } : {}),
          ...(g.openLimits ? { openLimits: g.openLimits } : {}),
          ...(g.refusals ? { refusals: g.refusals } : {}),
          ...(g.quietBeforeMs ? { quietBeforeMs: g.quietBeforeMs } : {}),
          schedule: {
            startMs: g.startMs, endMs: g.endMs, intervalMs: g.intervalMs, burstSlots: g.burstSlots, ...(g.issuedMs !== undefined ? { issuedMs: g.issuedMs } : {}),
            // What the batch left of it: the activity may start late too (a busy worker's queue).
            ...(g.floatMs ? { floatMs: g.floatMs } : {}),
          },
          // Without the URLs: the activity's input is in history, and a spooled chunk is read by its key.
          ...(mayFinish ? { markDone: { ...input.chunk, urls: undefined } } : {}),
        }));
      } catch (err) {
        // The batch was cancelled (its crawl was stopped): the main loop ends it; nothing to report.
        if (stopping()) return;
        if (scope.consideredCancelled && isCancellation(err)) {
          // Revoked before the activity had started, or while a retry of it waited (its last
          // attempt died): every URL goes back with its attempts. An attempt that died after
          // writing the grant's records must not leave them behind, or the URLs it had finished
          // would get a second record under a later grant: emptied, as a retried attempt would.
          await recordFinal({ source: input.source, unit: recordFile(unit, batchId, `g${g.grantId}`), outcomes: [] });
          pending.push(...indices);
          await handBack(g, Math.min(g.slots, indices.length));
          return;
        }
        if (isCancellation(err)) return;
        if (!(err instanceof ActivityFailure)) throw err;
        if (err.cause instanceof ApplicationFailure && err.cause.type === STORE_UNAVAILABLE && patched('store-outage-keeps-attempts')) {
          // The store would not take the records: not the URLs' fault. They go back with their
          // attempts (those already fetched are asked for again later), and the monitor holds.
          pending.push(...indices);
          await link.send(reportOutcomesSignal, {
            batchId, grantId: g.grantId, outcomes: [], unused: indices.length, storeRetryMs: STORE_RETRY_MS, storeError: err.cause.message.replace(/^the store failed /, ''), tokens: tokens(),
          });
          return;
        }
        // The activity failed for good: count a try for each URL; those out of tries end here.
        log.warn('fetch activity failed', { batchId, grantId: g.grantId, error: String(err.cause?.message ?? err.message) });
        const outcomes: RequestOutcome[] = indices.map((i) => {
          attempts[i]! += 1;
          const final = attempts[i]! >= input.maxAttempts;
          return { url: urls[i]!, cls: 'error', reason: `activity failed: ${err.cause?.message ?? err.message}`, sent: false, final, attempt: attempts[i]! };
        });
        const finalOnes = outcomes.filter((o) => o.final);
        if (finalOnes.length) await recordFinal({ source: input.source, unit: recordFile(unit, batchId, `g${g.grantId}-failed`), outcomes: finalOnes });
        for (const o of outcomes) {
          const i = byUrl.get(o.url)!;
          if (o.final) finish(i, o.cls);
          else pending.push(i);
        }
        await link.send(reportOutcomesSignal, { batchId, grantId: g.grantId, outcomes, unused: 0, tokens: tokens() });
        return;
      } finally {
        grantScopes.delete(g.grantId);
      }
      if (stopping()) {
        // Finished after its crawl was stopped: its records are written. The monitor waits for
        // this batch before it completes, so it counts them too; without this report a stopped
        // source's final status showed fewer URLs finished than its records (54 against 68).
        // Once, without retries: a monitor that gave up waiting has completed.
        if (patched('report-grant-finished-after-stop')) {
          const outcomes = result.outcomes.filter((o) => o.final).map((o) => ({ ...o, url: '' }));
          await CancellationScope.nonCancellable(() => link.sendOnce(reportOutcomesSignal, { batchId, grantId: g.grantId, outcomes, unused: 0 }));
        }
        return;
      }
      const repeats = new Set<RequestOutcome>();
      for (const o of result.outcomes) {
        const i = byUrl.get(o.url);
        if (i === undefined) continue;
        hostWaited.delete(i);
        attempts[i] = o.attempt;
        if (failedBefore.isRepeat(i, o) && patched('mark-repeat-failures')) repeats.add(o);
        // Answered: a retry starts again from the URL itself (the redirect may have changed).
        hops[i] = undefined;
        if (o.final) finish(i, o.cls);
        else pending.push(i);
      }
      for (const k of result.unused) pending.push(indices[k]!);
      for (const k of result.hostWaited ?? []) if (indices[k] !== undefined) hostWaited.add(indices[k]!);
      if (result.hostCrawlDelay) hostWaitMs = result.hostCrawlDelay.delayMs;
      for (const [k, hop] of result.hops ?? []) if (indices[k] !== undefined) hops[indices[k]!] = hop;
      lastGrant = { items: indices.length, decided: result.decidedWithoutRequest ?? 0 };
      // The chunk's last report also says the batch has finished (after its done-marker): a
      // separate batchFinished signal cost the batch a workflow task for its acknowledgement
      // and the monitor one to hear it, seconds each at the end of a busy crawl.
      const last = remaining === 0 && running === 1 && patched('finish-in-last-report');
      if (last) {
        // An activity of an older worker ignores markDone; so does one whose marker failed.
        if (!(mayFinish && result.chunkMarkedDone)) await markChunkDoneIfAny();
        finishReported = true;
      }
      // Outcomes go to the monitor without the URL text: it needs classes and timings, and
      // history stays small.
      await link.send(reportOutcomesSignal, {
        // Slots the grant did not use: a grant can carry more URLs than slots (grantItemCount).
        batchId, grantId: g.grantId, unused: Math.min(g.slots, result.unused.length), retryAfterMs: result.retryAfterMs, crawlDelayMs: result.crawlDelayMs, robotsRetryMs: result.robotsRetryMs, robotsError: result.robotsError,
        ...(result.quotaHoldMs !== undefined ? { quotaHoldMs: result.quotaHoldMs, ...(result.quotaLimit !== undefined ? { quotaLimit: result.quotaLimit } : {}), ...(result.quotaResetMs !== undefined ? { quotaResetMs: result.quotaResetMs } : {}) } : {}),
        ...(result.robotsHostWait ? { robotsHostWait: result.robotsHostWait } : {}),
        ...(result.hostCrawlDelay ? { hostCrawlDelay: result.hostCrawlDelay } : {}),
        ...(result.leastHostDelayMs !== undefined ? { leastHostDelayMs: result.leastHostDelayMs } : {}),
        storeRetryMs: result.storeRetryMs, storeError: result.storeError, missedSlots: result.missedSlots, dispatchMs: result.dispatchMs, decided: lastGrant,
        ...(result.networkDown ? { networkDown: true } : {}),
        ...(result.connectionWaits ? { connectionWaits: result.connectionWaits } : {}),
        ...(result.openLimits ? { openLimits: result.openLimits } : {}),
        ...(result.refusals ? { refusals: result.refusals } : {}),
        // The window's end as the monitor booked it: a floating grant's float is part of it.
        ...(result.lastSendMs !== undefined ? { windowTail: { endMs: g.endMs + (g.floatMs ?? 0), lastSendMs: result.lastSendMs } } : {}),
        outcomes: result.outcomes.map((o) => ({ ...o, url: '', ...(repeats.has(o) ? { repeat: true as const } : {}) })),
        tokens: tokens(),
        ...(last ? { finished: { chunkId: input.chunk.chunkId, urls: urls.length } } : {}),
      });
    }

    // A chunk crawled again after a stop: the monitor of the new crawl counts what the earlier
    // run recorded among its outcomes (done, link rot, ...), as never sent (no health sample).
    // Started again by the same monitor: only what it has not counted yet. The token request
    // rides along, as with every report.
    if (recorded.size > 0 && patched('report-recorded-outcomes')) {
      const toSkip = { ...input.revived?.counted };
      const outcomes = finals.flatMap((cls): RequestOutcome[] => {
        if (cls === null) return [];
        if ((toSkip[cls] ?? 0) > 0) {
          toSkip[cls]! -= 1;
          return [];
        }
        return [{ url: '', cls, sent: false, final: true, attempt: 0 }];
      });
      await link.send(reportOutcomesSignal, { batchId, grantId: 0, outcomes, unused: 0, tokens: tokens() });
    }
    while (remaining > 0) {
      if (pending.length > 0 && ask() !== lastAsk) {
        await link.send(requestTokensSignal, { batchId, ...tokens() });
      }
      const seenBefore = grantsSeen;
      const pendingBefore = pending.length;
      await condition(() => grants.length > 0 || revokedUnstarted.length > 0 || remaining === 0 || pending.length !== pendingBefore || grantsSeen !== seenBefore);
      while (revokedUnstarted.length > 0) {
        const g = revokedUnstarted.shift()!;
        await handBack(g, g.slots);
      }
      while (grants.length > 0) {
        // A first grant that may float starts no sooner than the fetch activity can be running.
        const g = floatGrant(grants.shift()!, Date.now(), FLOAT_LEAD_MS);
        // Its own latest grant tells best; before it has one, the source's latest (from the monitor).
        const share = lastGrant ? lastGrant.decided / lastGrant.items : g.decidedShare;
        const count = share && patched('grants-carry-decided-urls') ? grantItemCount(g.slots, pending.length, share) : g.slots;
        const indices = takeForGrant(g, count);
        if (indices.length === 0) {
          await handBack(g, g.slots);
          continue;
        }
        running += 1;
        // Anything but an activity failure rejects here and fails the workflow task (retried).
        // A cancellation (the crawl stopped while this grant was reporting) is not a failure:
        // left unhandled, it too would fail every workflow task of a batch still winding down.
        void runGrant(g, indices).catch((err) => {
          if (!isCancellation(err)) throw err;
        }).finally(() => {
          running -= 1;
        });
      }
      // The monitor subtracts the slots of every grant it sent from our last request, so using a
      // grant needs no new request: its view already matches ours.
      lastAsk = ask();
    }
    await condition(() => running === 0);

    const counts: Partial<Record<OutcomeClass, number>> = {};
    for (const f of finals) if (f) counts[f] = (counts[f] ?? 0) + 1;
    if (!finishReported) {
      // Grants that ended together, a chunk an earlier run had finished, or a history from before.
      await markChunkDoneIfAny();
      await link.send(batchFinishedSignal, { batchId, chunkId: input.chunk.chunkId, urls: urls.length });
    }
    return { batchId, counts, urls: urls.length };
  } catch (err) {
    if (waitsForFetches && isCancellation(err)) {
      await CancellationScope.nonCancellable(async () => {
        await condition(() => running === 0);
        // Once: a monitor that has completed already (or never waits) needs no retries.
        await link.sendOnce(batchStoppedSignal, { batchId });
      });
    }
    throw err;
  }
}
