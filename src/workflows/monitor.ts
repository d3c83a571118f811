import {
  ApplicationFailure, CancellationScope, ParentClosePolicy, allHandlersFinished, condition, continueAsNew, getExternalWorkflowHandle, isCancellation, log, metricMeter, patched as markedPatch, setHandler,
  setCurrentDetails, startChild, upsertSearchAttributes, workflowInfo, WorkflowIdReusePolicy, type SignalDefinition,
} from '@temporalio/workflow';
import type { PolicyEvent } from '../politeness/governor';
import { STOPPED_BATCHES_WAIT_MS } from '../shared/heartbeat';
import { shortGrantFloatMs, slowWindowFloatMs } from '../politeness/pacing';
import { invalidBurst, invalidMaxConnections, invalidRate } from '../politeness/targetRate';
import { DEFAULT_ADAPTIVE, MAX_RETRY_AFTER_LIMIT_S, invalidRetryAfterCap } from '../politeness/adaptiveRate';
import { FINISHED, monitorSearchAttributes, shownBy, shownKey } from '../temporal/searchAttributes';
import type { Grant, WorkChunk, WorkItem } from '../shared/types';
import { crawlBatchWorkflow, runBatch, type MonitorLink } from './batch';
import {
  addWorkSignal, batchFinishedSignal, batchStoppedSignal, grantSignal, pauseUpdate, pingSignal, reportOutcomesSignal, requestTokensSignal, resumeUpdate, revokeGrantsSignal,
  setMaxConnectionsUpdate, setMaxRateUpdate, setMaxRetryAfterUpdate, setRateUpdate, statsQuery, stopUpdate, type AddWorkOptions, type ResumeInput, type SetMaxConnectionsInput, type SetMaxRateInput, type SetMaxRetryAfterInput, type SetRateInput,
} from './messages';
import { MonitorModel, shownOf, type MonitorInput } from './monitorState';
import { detailsMarkdown, type MonitorStats } from './monitorStats';
import { PATCH_LEVEL, inLevel, levelOf, patchesOf } from './patchLevel';
import { MAX_REVIVALS, dueForRevival, heardFrom, markLost, markRevived, silentBatches } from './lostBatches';
import type { BatchEntry } from './monitorState';
import { checkMonitorInput, checkWorkItems, configProblem, monitorIdProblem } from './inputChecks';

/** How much later a batch's first grant may slide when the batch starts late (see the main loop). */
const START_FLOAT_MS = 15_000;

/** A batch's one-line summary, shown on its page in the Web UI. */
function batchSummary(source: string, chunk: WorkChunk): string {
  return `${source}: chunk ${chunk.chunkId}, ${chunk.count} URL${chunk.count === 1 ? '' : 's'}`;
}

/**
 * The crawl monitor: one long-running workflow per source, the durable governor of its
 * politeness. This file is the message table and the main loop; decisions live in
 * MonitorModel and the politeness policy.
 */
export async function crawlMonitorWorkflow(given: MonitorInput): Promise<MonitorStats> {
  // Input written by hand that cannot be used fails the start, saying why (see inputChecks).
  const checked = checkMonitorInput(given);
  if ('problem' in checked) throw ApplicationFailure.nonRetryable(`invalid monitor input: ${checked.problem}`, 'InvalidMonitorInput');
  const input = checked.input;
  // Asked only of a monitor that would fail (no marker otherwise): one started by hand under
  // another id before this check replays as it ran.
  const idProblem = monitorIdProblem(input, workflowInfo().workflowId);
  if (idProblem && markedPatch('monitor-id-from-source')) throw ApplicationFailure.nonRetryable(`invalid monitor input: ${idProblem}`, 'InvalidMonitorInput');
  const m = MonitorModel.fromInput(input, Date.now());
  const patched = patchesOf(input.patchLevel);
  // Asked only where a lost batch would change what the monitor does (lostBatches.ts). Its
  // timers, which a history from before it lacks, wait for that answer unless the level gives it
  // (a monitor started by hand without a level times no probes until it has asked).
  let revivingKnown = inLevel(input.patchLevel, 'revive-lost-batches');
  const reviving = () => (revivingKnown ||= patched('revive-lost-batches'));
  const heard = (batchId: string) => {
    const b = m.batch(batchId);
    if (b) heardFrom(b, Date.now());
  };
  /**
   * Batches this run started: their ends come as the child's closing event, at no cost in
   * timers or signals. Batches of an earlier run are probed when silent (lostBatches.ts).
   */
  const startedHere = new Set<string>();
  /** A batch on the books found ended: it is started again a minute later (lostBatches.ts). */
  const lose = (b: BatchEntry, how: string) => {
    log.warn('batch ended without finishing its chunk; it starts again in a minute', { batchId: b.batchId, how });
    markLost(b, Date.now());
    wake();
  };
  const watchEnd = (batchId: string, child: { result(): Promise<unknown> }) => {
    startedHere.add(batchId);
    child.result().catch((err) => {
      const b = m.batch(batchId);
      // A stopped crawl takes its batches off the books before it cancels them.
      if (b && m.state.governor.mode !== 'stopped' && reviving()) lose(b, String(err));
    });
  };
  /** Batches to look after with probes and timers: lost ones, and those this run did not start. */
  const probed = () => m.state.batches.filter((b) => b.lostMs !== undefined || !startedHere.has(b.batchId));
  let dirty = false;
  const wake = () => { dirty = true; };
  /** Why granting stopped, when the grants already given must be revoked (see the main loop). */
  let revokeFor: string | undefined;
  // Served with the worker's metrics (CRAWL_METRICS_ADDRESS), by event and not by source, as the
  // activities' are: an alert on halts, a graph of sites pushing back. Not counted in replay.
  const monitorEvents = metricMeter.createCounter('crawl_monitor_events', 'events',
    'Crawl monitors\' policy events: halted (waits for an operator), cooling (temporary halt), throttled (a 429, 503, 509 or 529: rate halved), latency-slowdown, resumed, paused, stopped and settings changed');
  const announce = (events: PolicyEvent[]) => {
    for (const e of events) {
      monitorEvents.add(1, { event: e.event });
      const line = `${e.event}: ${e.detail}`;
      if (e.event === 'paused' || e.event === 'cooling' || e.event === 'halted') revokeFor = line;
      if (e.event === 'halted') {
        // The alert an operator must see: log event, search attribute (below), UI details.
        log.error('ALERT source halted permanently; waiting for an operator', { source: m.state.source, reason: e.detail });
        m.alert(`HALTED ${e.detail}`, Date.now());
      } else {
        // The store failing is the operator's to fix, not the site's: it is logged as a warning.
        if (e.event === 'store-unavailable') log.warn(`monitor ${e.event}`, { source: m.state.source, detail: e.detail });
        else log.info(`monitor ${e.event}`, { source: m.state.source, detail: e.detail });
        if (e.event !== 'rate-set') m.alert(line, Date.now());
      }
    }
    if (events.length) wake();
  };

  const shownTarget = () => `target ${Math.round(m.state.governor.target * 1000) / 1000}/s`;
  const heldByCrawlDelay = () => m.state.governor.siteMaxRate !== undefined && m.state.governor.target === m.state.governor.siteMaxRate;
  const CRAWL_DELAY_CAP = 'the site\'s robots.txt Crawl-delay';
  /** The target an operator's rate became, and what capped it when it is lower. */
  const rateAnswer = (asked: number): string => {
    if (m.state.governor.target >= asked) return shownTarget();
    return `${shownTarget()} (capped by ${heldByCrawlDelay() ? CRAWL_DELAY_CAP : `the global ceiling of ${m.governor.cfg.globalCeiling}/s`})`;
  };
  setHandler(statsQuery, () => m.stats(Date.now()));
  /** A setting that came with addWork: taken when it can be used, else said where an operator looks. */
  const takeGiven = (what: string, problem: string | undefined, take: () => PolicyEvent | undefined) => {
    if (problem) {
      log.warn(`addWork: ${what} ignored`, { source: m.state.source, problem });
      m.alert(`addWork: ${what} ignored: ${problem}`, Date.now());
      return;
    }
    const changed = take();
    if (changed) announce([changed]);
  };
  setHandler(addWorkSignal, (items: WorkItem[], options?: AddWorkOptions) => {
    // Before the work: the new URLs go at the entry's rate.
    const { catalog, maxRate, maxRetryAfterMs } = options ?? {};
    if (catalog !== undefined) takeGiven('catalogue entry', configProblem(catalog), () => m.governor.takeCatalogEntry(catalog, Date.now()));
    if (maxRate !== undefined) takeGiven('maxRate', invalidRate(maxRate), () => m.governor.takeGivenCeiling(maxRate, Date.now()));
    if (maxRetryAfterMs !== undefined) {
      takeGiven('maxRetryAfterMs', retryAfterCapProblem(maxRetryAfterMs), () => m.governor.takeMaxRetryAfter(maxRetryAfterMs, Date.now()));
    }
    // A signal cannot be refused: what cannot be used is said where an operator looks.
    const checked = checkWorkItems(items);
    for (const problem of checked.problems) {
      log.warn('addWork: work ignored', { source: m.state.source, problem });
      m.alert(`addWork ignored: ${problem}`, Date.now());
    }
    // Only chunks written by hand come one by one (`crawl start` sends ranges), and reusing a
    // chunkId for other URLs would otherwise lose them without a word.
    const added = m.addWork(checked.items, (chunkId) => m.alert(`addWork ignored: chunk ${JSON.stringify(chunkId)} was added before and is not crawled again. ${NEW_CHUNK_ID}`, Date.now()));
    if (added || checked.problems.length) wake();
  });
  /** The batch traffic handlers, also called directly by the batches this monitor runs itself. */
  const ownHandlers = new Map<string, (arg: never) => void>();
  const onBatchMessage = <T>(def: SignalDefinition<[T]>, handler: (arg: T) => void) => {
    setHandler(def, handler);
    ownHandlers.set(def.name, handler as (arg: never) => void);
  };
  onBatchMessage(requestTokensSignal, (req) => { heard(req.batchId); m.onTokenRequest(req); wake(); });
  onBatchMessage(reportOutcomesSignal, (report) => {
    heard(report.batchId);
    // Only activities of this version report a Crawl-delay; a history from before it replays without.
    if (report.crawlDelayMs !== undefined && !patched('honour-crawl-delay')) report = { ...report, crawlDelayMs: undefined };
    if (report.robotsRetryMs !== undefined && !patched('hold-for-robots')) report = { ...report, robotsRetryMs: undefined };
    if (report.storeRetryMs !== undefined && !patched('hold-for-store')) report = { ...report, storeRetryMs: undefined };
    // A monitor that met pages before it knew them did not halt for them: its history replays so.
    if (report.outcomes.some((o) => o.page) && !patched('halt-on-pages')) report = { ...report, outcomes: report.outcomes.map(({ page: _page, ...o }) => o) };
    if (report.dispatchMs !== undefined && patched('adaptive-grant-lead')) m.governor.noteDispatch(report.dispatchMs);
    // A history made when the latency baseline learnt per sample replays with that rule.
    // Only activities of this version report leastHostDelayMs, and only such a report lifts a cap.
    announce(m.onReport(report, Date.now(), { latencyBySample: !patched('latency-baseline-by-time'), liftCrawlDelay: () => patched('lift-crawl-delay-cap'), crawlDelayAfterBooked: () => patched('crawl-delay-after-booked'), watchDownloadSpeed: () => patched('watch-download-speed') }));
    // After the report: a rate it lowered (429, Crawl-delay) spaces the next window by its slower slots.
    if (report.windowTail && patched('reclaim-window-tail') && m.governor.reclaimWindowTail(report.windowTail.endMs, report.windowTail.lastSendMs)) wake();
    // Patched as the batch's side is: a monitor that met such a report before it knew `finished`
    // ignored it, and its history must replay the same.
    if (report.finished && patched('finish-in-last-report')) {
      m.onBatchFinished({ batchId: report.batchId, ...report.finished });
      wake();
    }
    if (report.tokens) wake();
  });
  onBatchMessage(batchFinishedSignal, (done) => { m.onBatchFinished(done); wake(); });
  /** Cancelled batches whose fetch activities have ended (see the stop below). */
  const stoppedBatches = new Set<string>();
  onBatchMessage(batchStoppedSignal, ({ batchId }) => {
    stoppedBatches.add(batchId);
    // Cancelled from outside (`temporal workflow cancel` on the batch), not by a stop of the
    // crawl, which takes its batches off the books first: lost, and started again.
    const b = m.batch(batchId);
    if (b && m.state.governor.mode !== 'stopped' && reviving()) lose(b, 'cancelled');
  });

  // Histories from before it replay the old resume, which ended a temporary halt.
  const keepTemporaryHalt = () => patched('resume-keeps-temporary-halt');
  setHandler(pauseUpdate, () => { announce([m.governor.pause(keepTemporaryHalt())]); return m.state.governor.mode; }, {
    validator: () => { if (m.state.governor.mode === 'stopped') throw new Error('the crawl is stopped; it cannot be paused'); },
  });
  setHandler(resumeUpdate, (arg?: ResumeInput) => {
    announce([m.governor.resume(Date.now(), arg?.rate, keepTemporaryHalt())]);
    // The mode, as always (with a temporary halt, until when); and when a ceiling kept the rate asked for, which one.
    const g = m.state.governor;
    const mode = g.mode === 'cooling' ? `cooling until ${new Date(g.coolingUntilMs).toISOString()} (a temporary halt: no requests until then)` : g.mode;
    const capped = arg?.rate !== undefined && g.target < arg.rate;
    return capped ? `${mode}, ${rateAnswer(arg.rate!)}` : mode;
  }, {
    validator: (arg?: ResumeInput) => {
      if (m.state.governor.mode === 'stopped') throw new Error('the crawl is stopped; start it again instead of resuming');
      if (arg?.rate !== undefined) assertValid(invalidRate(arg.rate));
    },
  });
  setHandler(setRateUpdate, (arg: SetRateInput) => {
    announce([m.governor.setRate(arg.rate, arg.burst, Date.now())]);
    return rateAnswer(arg.rate);
  }, {
    validator: (arg: SetRateInput) => {
      if (!arg || typeof arg !== 'object') throw new Error('setRate needs {"rate": <requests per second>, "burst"?: <n>}');
      assertValid(invalidRate(arg.rate));
      if (arg.burst !== undefined) assertValid(invalidBurst(arg.burst));
    },
  });
  setHandler(setMaxRateUpdate, (arg: SetMaxRateInput) => {
    announce([m.governor.setCeiling(arg.maxRate ?? undefined, Date.now())]);
    const ceiling = arg.maxRate === null ? 'no global ceiling' : `global ceiling ${arg.maxRate}/s`;
    return `${ceiling}, ${shownTarget()}${heldByCrawlDelay() ? ` (capped by ${CRAWL_DELAY_CAP})` : ''}`;
  }, {
    validator: (arg: SetMaxRateInput) => {
      if (!arg || typeof arg !== 'object' || !('maxRate' in arg)) throw new Error('setMaxRate needs {"maxRate": <requests per second> | null}');
      if (arg.maxRate !== null) assertValid(invalidRate(arg.maxRate));
    },
  });
  setHandler(setMaxRetryAfterUpdate, (arg: SetMaxRetryAfterInput) => {
    const changed = m.governor.setMaxRetryAfter(arg.maxRetryAfterMs, Date.now());
    announce([changed]);
    return changed.detail;
  }, {
    validator: (arg: SetMaxRetryAfterInput) => {
      if (!arg || typeof arg !== 'object' || !('maxRetryAfterMs' in arg)) throw new Error('setMaxRetryAfter needs {"maxRetryAfterMs": <ms>}');
      assertValid(retryAfterCapProblem(arg.maxRetryAfterMs));
    },
  });
  setHandler(setMaxConnectionsUpdate, (arg: SetMaxConnectionsInput) => {
    const changed = m.governor.setMaxConnections(arg.maxConnections);
    announce([changed]);
    return changed.detail;
  }, {
    validator: (arg: SetMaxConnectionsInput) => {
      if (!arg || typeof arg !== 'object' || !('maxConnections' in arg)) throw new Error('setMaxConnections needs {"maxConnections": <requests open at once> | null}');
      if (arg.maxConnections !== null) assertValid(invalidMaxConnections(arg.maxConnections));
    },
  });
  setHandler(stopUpdate, () => { announce([m.governor.stop()]); return 'stopped'; });

  const batchQueue = m.state.options.taskQueue ?? workflowInfo().taskQueue;
  // Started with its search attributes set (`crawl start` sets them, continue-as-new keeps them):
  // an upsert of the same values would cost a history event and a visibility write. Asked
  // only then, so that a monitor started by hand (without them) records no patch marker.
  const startedWith = shownBy(workflowInfo().typedSearchAttributes);
  /**
   * Batches this monitor runs itself (a small source, see SMALL_SOURCE_URLS): what the monitor
   * sends them goes to these handlers; until the batch listens it waits, as a signal would.
   */
  const ownBatches = new Map<string, { scope: CancellationScope; deliver(call: (to: BatchListener) => void): void }>();
  const runOwnBatch = (batchId: string, chunk: WorkChunk, firstGrant: Grant | undefined) => {
    let listener: BatchListener | undefined;
    const waiting: ((to: BatchListener) => void)[] = [];
    // A call reaches the monitor at once and cannot be lost: sent once or until delivered alike.
    const toMonitor = async <T extends unknown[]>(def: SignalDefinition<T>, ...args: T) => { ownHandlers.get(def.name)!(args[0] as never); };
    const link: MonitorLink = {
      send: toMonitor,
      sendOnce: toMonitor,
      listen: (to) => {
        listener = to;
        for (const call of waiting.splice(0)) call(to);
      },
    };
    const scope = new CancellationScope();
    ownBatches.set(batchId, { scope, deliver: (call) => (listener ? call(listener) : waiting.push(call)) });
    startedHere.add(batchId);
    const info = workflowInfo();
    const batchInput = {
      source: m.state.source, monitorId: info.workflowId, chunk, maxAttempts: m.state.options.maxAttempts,
      // Fixed for the run, as a child's input is: a later build replays this history at this level.
      patchLevel: Math.max(input.patchLevel ?? 0, levelOf('small-source-batch-in-monitor')), asked: true, ...(firstGrant ? { firstGrant } : {}),
    };
    const { taskQueue } = m.state.options;
    scope.run(() => runBatch(batchInput, { batchId, runId: info.runId, link, ...(taskQueue ? { taskQueue } : {}) })).then(
      () => { ownBatches.delete(batchId); wake(); },
      (err) => {
        ownBatches.delete(batchId);
        wake();
        if (isCancellation(err)) return;
        // As a child batch that failed: started again, as a child workflow, skipping what it recorded.
        const b = m.batch(batchId);
        if (b && m.state.governor.mode !== 'stopped') lose(b, String(err));
      },
    );
  };
  /** A grant for a batch: a signal to a child, a call to one of the monitor's own. */
  const sendGrant = async (batchId: string, grant: Grant) => {
    const own = ownBatches.get(batchId);
    if (own) own.deliver((to) => to.grant(grant));
    else await getExternalWorkflowHandle(batchId).signal(grantSignal, grant);
  };

  /** Starts a lost batch again under its id; its new run skips the URLs the lost one recorded. */
  const revive = async (b: BatchEntry) => {
    const nowMs = Date.now();
    if (!b.chunk) {
      // State carried from code that did not keep a batch's chunk: it cannot be started again here.
      const text = `batch ${b.batchId} ended without finishing chunk ${JSON.stringify(b.chunkId)}, which this monitor cannot start again (it was started by an older build): run \`crawl start\` with the manifest again to crawl what it left`;
      log.error(`ALERT ${text}`, { source: m.state.source });
      m.alert(text, nowMs);
      m.onBatchFinished({ batchId: b.batchId, chunkId: b.chunkId, urls: 0 });
      return;
    }
    if ((b.revivals ?? 0) >= MAX_REVIVALS) {
      // Resume gives it as many tries again.
      b.revivals = 0;
      announce(m.governor.halt(`batch ${b.batchId} ended ${MAX_REVIVALS + 1} times without finishing its chunk (terminated, cancelled, failed or timed out: its history in the Web UI says which)`));
      return;
    }
    markRevived(b, nowMs);
    try {
      const child = await startChild(crawlBatchWorkflow, {
        workflowId: b.batchId,
        taskQueue: batchQueue,
        args: [{ source: m.state.source, monitorId: workflowInfo().workflowId, chunk: b.chunk, maxAttempts: m.state.options.maxAttempts, patchLevel: PATCH_LEVEL, revived: { counted: b.counted ?? {} } }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
        staticSummary: `${batchSummary(m.state.source, b.chunk)}, started again`,
      });
      watchEnd(b.batchId, child);
      log.warn('batch ended without finishing its chunk; started again', { batchId: b.batchId, revivals: b.revivals });
      m.alert(`batch ${b.batchId} ended without finishing its chunk (terminated, cancelled, failed or timed out: its history says which); started again, skipping the URLs it recorded`, nowMs);
    } catch (err) {
      // Running again already (started by someone else), or it completed after all.
      log.warn('lost batch not started again; it exists', { batchId: b.batchId, error: String(err) });
      await getExternalWorkflowHandle(b.batchId).signal(pingSignal).catch(() => m.onBatchFinished({ batchId: b.batchId, chunkId: b.chunkId, urls: b.urls }));
    }
  };

  let lastPublished = '';
  if (startedWith?.source === input.source && patched('search-attributes-from-start')) {
    lastPublished = shownKey(startedWith);
    // As if published now: later changes wait out the interval as after any upsert.
    m.state.lastSearchAttributesMs = Date.now();
  }

  /**
   * The grant with `atLeastMs` of float, or more for a slow source's window (slowWindowFloatMs):
   * each holds one slot or two, and a trip to its activity longer than the lead lost them. The
   * patch is asked only for such windows; histories from before kept their timelines without float.
   */
  const floated = (g: Grant, atLeastMs = 0): Grant => {
    const slow = slowWindowFloatMs(g.intervalMs);
    const f = Math.max(atLeastMs, slow > 0 && patched('float-slow-windows') ? slow : 0);
    return f > 0 ? m.floatGrant(g, f) : g;
  };

  /** A grant of one or two slots may float (shortGrantFloatMs); the patch is asked only for such grants. */
  const shortFloat = (g: Grant): number => {
    const f = shortGrantFloatMs(g.slots, g.intervalMs);
    return f > 0 && patched('float-short-first-grant') ? f : 0;
  };

  for (;;) {
    const now = Date.now();
    announce(m.governor.tick(now));

    // patched() only until the first grant: the choice concerns that window alone. The tail
    // slack's patch only when a window is a source's last, and the whole-source one only when
    // a short first window would be that: histories from before them planned such windows without.
    const planGrants = () => m.planGrants(now, m.governor.isFirstWindow() && patched('short-first-window'), () => patched('tail-grant-slack'), () => patched('whole-source-in-one-window'), () => patched('lift-crawl-delay-cap'));
    const chunks = m.takeChunksToStart();
    const batchIdOf = (chunk: WorkChunk) => `${workflowInfo().workflowId}/batch:${chunk.chunkId}`;
    // A batch that starts alone (no other wants slots) gets its first grant in its start input:
    // asking for it and waiting cost a request signal, a grant signal and a workflow task on each
    // side (18 of a 3-URL source's 54 history events), and two trips through a busy worker's task
    // queue before the first request. A source's last window may float: a batch that starts late
    // on a busy worker slides it instead of missing its first slots. Batches started together ask
    // when they are running, as before: their windows follow one another and cannot float.
    // Patched: histories from before it started every batch first.
    const alone = chunks.length === 1 && m.wants().every((w) => w.wanted === 0) && patched('first-grant-with-start');
    for (const chunk of chunks) m.batchStarted(batchIdOf(chunk), chunk, alone, now);
    let grants = alone ? planGrants() : [];
    for (const chunk of chunks) {
      const batchId = batchIdOf(chunk);
      const planned = grants.find((g) => g.batchId === batchId);
      grants = grants.filter((g) => g !== planned);
      // The source's last window floats: after any other, the next is planned ahead of its end
      // (but for a slow source's: see floated).
      const last = planned !== undefined && planned.slots >= chunk.count && m.queuedChunks() === 0;
      const firstGrant = planned && floated(planned, last ? START_FLOAT_MS : shortFloat(planned));
      // A source of a few URLs, all in this chunk: the monitor runs the batch itself. As a child
      // workflow it cost 17 of a one-URL source's 33 history events, a second workflow and four of
      // its six workflow tasks, and the embedded server spent ~180 ms of CPU per such source
      // (1,000 one-URL sources: 168 s, the server over a core throughout).
      // Only a chunk in a file (as `crawl start` writes them): a later run given it again finds
      // its URLs recorded. A chunk given inline by hand is kept from running twice by its
      // completed batch workflow (`counts as finished`), which such a batch does not leave.
      const own = alone && chunk.spool !== undefined && chunk.count <= (m.state.options.smallSourceUrls ?? SMALL_SOURCE_URLS) && m.queuedChunks() === 0
        && m.state.batches.length === 1 && patched('small-source-batch-in-monitor');
      if (own) {
        runOwnBatch(batchId, chunk, firstGrant);
        continue;
      }
      try {
        const child = await startChild(crawlBatchWorkflow, {
          workflowId: batchId,
          taskQueue: batchQueue,
          args: [{
            source: m.state.source, monitorId: workflowInfo().workflowId, chunk, maxAttempts: m.state.options.maxAttempts, patchLevel: PATCH_LEVEL,
            ...(alone ? { asked: true } : {}), ...(firstGrant ? { firstGrant } : {}),
          }],
          // Batches outlive a monitor run that continues-as-new; they find it again by id.
          parentClosePolicy: ParentClosePolicy.ABANDON,
          staticSummary: batchSummary(m.state.source, chunk),
          // A batch of the chunk that was cancelled (its crawl was stopped) or failed may run
          // again: the new run skips the URLs the earlier one recorded. A completed one may not.
          workflowIdReusePolicy: patched('batch-restart-after-stop') ? WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY : WorkflowIdReusePolicy.REJECT_DUPLICATE,
        });
        watchEnd(batchId, child);
      } catch (err) {
        // Already started (a previous run of this monitor did it before continuing-as-new,
        // or the same chunk was added twice): it will report to us by id all the same.
        log.warn('batch already exists; adopting it', { batchId, error: String(err) });
        if (alone) m.withdrawAsk(batchId, firstGrant);
        // Unless it has completed already (its chunk is done; its done-marker was lost): then it
        // never would, and the monitor would wait for it for ever.
        if (patched('probe-adopted-batch')) {
          await getExternalWorkflowHandle(batchId).signal(pingSignal).catch(() => {
            log.warn('adopted batch has ended already; its chunk counts as finished', { batchId });
            m.alert(`chunk ${JSON.stringify(chunk.chunkId)} counts as finished: its batch ${batchId} has ended already. ${NEW_CHUNK_ID}`, Date.now());
            m.onBatchFinished({ batchId, chunkId: chunk.chunkId, urls: chunk.count });
          });
        }
      }
    }

    // Batches that ended without finishing their chunks start again; silent ones of an earlier
    // run are asked whether they still run. Not while the source is paused or halted: nothing
    // is lost waiting. (Only a batch found lost, which asked patched(), is due.)
    for (const b of m.watchingBatches() ? dueForRevival(m.state.batches, now) : []) {
      if (!m.watchingBatches()) break;
      await revive(b);
    }
    for (const b of m.watchingBatches() ? silentBatches(probed(), now) : []) {
      if (!m.watchingBatches() || !reviving()) break;
      await getExternalWorkflowHandle(b.batchId).signal(pingSignal).then(() => heardFrom(b, Date.now()), (err) => lose(b, `a ping did not reach it: ${String(err)}`));
    }

    if (!alone) grants = planGrants().map((g) => floated(g, shortFloat(g)));
    for (const g of grants) {
      try {
        // The time of issue lets the fetch activity report how long the grant took to reach it,
        // which sets the lead of later windows (politeness/grantLead.ts).
        await sendGrant(g.batchId, patched('adaptive-grant-lead') ? { ...g, issuedMs: now } : g);
      } catch (err) {
        // Gone without finishing its chunk: before, its chunk counted as finished, none of what
        // it had left crawled. Histories from before replay that.
        const b = m.batch(g.batchId);
        if (b && reviving()) lose(b, `a grant did not reach it: ${String(err)}`);
        else {
          log.warn('grant not delivered; batch gone', { batchId: g.batchId, error: String(err) });
          m.onBatchFinished({ batchId: g.batchId, chunkId: '', urls: 0 });
        }
      }
    }

    // Fail closed: a grant is valid only while the source may be crawled. Without this, a pause
    // or a breaker trip stopped new grants only, and the grants in use ran on to the ends of
    // their windows (up to a minute of requests to a site that was failing or that an operator
    // had paused). Patched: histories from before it sent no such signals.
    if (revokeFor !== undefined) {
      const reason = revokeFor;
      revokeFor = undefined;
      const holders = m.batchesWithOpenGrants(now);
      if (holders.length > 0 && patched('revoke-grants-when-granting-stops')) {
        for (const batchId of holders) {
          const own = ownBatches.get(batchId);
          if (own) {
            own.deliver((to) => to.revoke(reason));
            continue;
          }
          await getExternalWorkflowHandle(batchId).signal(revokeGrantsSignal, { reason }).catch(
            (err) => log.warn('grants not revoked; batch gone', { batchId, error: String(err) }),
          );
        }
      }
    }

    const mode = m.state.governor.mode;
    const finishing = mode !== 'stopped' && m.drained() && m.state.options.finishWhenDrained;
    // A drained monitor completes in this task: its search attributes say `finished`, so that
    // `CrawlState = 'running'` in the Web UI lists only sources still crawling (the governor's
    // mode stays running). Asked only here, once per run.
    const shownState = finishing && patched('finished-state-shown') ? FINISHED : undefined;
    lastPublished = publish(m, lastPublished, now, { state: shownState });

    if (mode === 'stopped' || finishing) {
      // Batches outlive the monitor by design (ABANDON): once it has stopped for good, they
      // would wait for grants for ever. Cancelling one also cancels its running fetch activity,
      // which stops sending at its next heartbeat and records what it finished.
      if (mode === 'stopped') {
        const cancelled: string[] = [];
        for (const batchId of m.takeBatchesToCancel()) {
          const own = ownBatches.get(batchId);
          if (own) {
            // It says when its fetch activity has ended, as a cancelled child does.
            own.scope.cancel();
            cancelled.push(batchId);
            continue;
          }
          await getExternalWorkflowHandle(batchId).cancel().then(
            () => cancelled.push(batchId),
            (err) => log.warn('batch not cancelled; gone already', { batchId, error: String(err) }),
          );
        }
        // The monitor completes once its batches' fetch activities have stopped, so that a crawl
        // started again right after `crawl stop` returns cannot fetch what they were finishing.
        // Bounded: a batch on a dead worker waits for its activity's heartbeat timeout.
        if (patched('monitor-waits-for-stopped-batches')) {
          const allStopped = await condition(() => cancelled.every((id) => stoppedBatches.has(id)), STOPPED_BATCHES_WAIT_MS);
          if (!allStopped) log.warn('stopped without hearing from every cancelled batch', { waitingFor: cancelled.filter((id) => !stoppedBatches.has(id)).length });
        }
      }
      // Its own batch ends in the activation that finished its chunk (or, stopped, with its fetch).
      if (mode !== 'stopped') await condition(() => ownBatches.size === 0);
      await condition(allHandlersFinished);
      // The final values, whatever the interval; not again when the loop has just written them
      // (a source that ran longer than the interval wrote the same values twice). Asked only
      // then: a monitor without a patch level records no marker where the answer changes nothing.
      // (`finished-state-shown` came after `final-search-attributes-once`: a run that showed
      // `finished` has it without asking.)
      const writtenAlready = shownKey(shownOf(m, shownState)) === lastPublished && (shownState === FINISHED || patched('final-search-attributes-once'));
      publish(m, writtenAlready ? lastPublished : '', Date.now(), { final: true, state: shownState });
      // The result (the Web UI's Result, `temporal workflow result`, `crawl status --json`) names
      // the state as the search attribute and details do: it said running for a finished crawl.
      const final = m.stats(Date.now());
      return shownState ? { ...final, state: shownState } : final;
    }
    const info = workflowInfo();
    // Not while it runs a batch itself: that batch's activity and state live in this run (a
    // small source's batch ends within a few grants).
    if ((info.continueAsNewSuggested || info.historyLength > m.state.options.maxHistoryEvents) && ownBatches.size === 0) {
      await condition(allHandlersFinished);
      // The ceiling as it is now: setMaxRate may have changed the one the crawl started with; and
      // the Retry-After cap, which a later start or set-max-retry-after may have changed.
      const { globalCeiling, adaptive: { maxRetryAfterMs } } = m.governor.cfg;
      const given = input.governorConfig;
      const sameCap = maxRetryAfterMs === (given?.adaptive?.maxRetryAfterMs ?? DEFAULT_ADAPTIVE.maxRetryAfterMs);
      const governorConfig = globalCeiling === given?.globalCeiling && sameCap ? given
        : { ...given, globalCeiling, ...(sameCap ? {} : { adaptive: { ...DEFAULT_ADAPTIVE, ...given?.adaptive, maxRetryAfterMs } }) };
      // The next run's history starts afresh: it takes this code's patches without markers.
      await continueAsNew<typeof crawlMonitorWorkflow>({ source: m.state.source, carried: m.state, governorConfig, patchLevel: PATCH_LEVEL });
    }

    const wakeAt = m.nextWakeMs(Date.now(), revivingKnown ? probed() : undefined);
    dirty = false;
    if (wakeAt === undefined) await condition(() => dirty);
    else await condition(() => dirty, Math.max(1, wakeAt - Date.now()));
  }
}

const NEW_CHUNK_ID = 'A chunkId names its URLs for good: give other URLs a new one.';

/** A source of at most this many URLs (one chunk, nothing else queued) has its batch run by its monitor. */
export const SMALL_SOURCE_URLS = 50;
/** Where a batch run by its monitor takes the monitor's grants and revocations. */
type BatchListener = Parameters<MonitorLink['listen']>[0];

/** maxRetryAfterMs as the Temporal CLI gives it: in ms, where the crawl CLI takes seconds. */
function retryAfterCapProblem(ms: unknown): string | undefined {
  if (typeof ms === 'number' && !invalidRetryAfterCap(ms / 1000)) return undefined;
  return `maxRetryAfterMs must be a number of ms from 1000 to ${MAX_RETRY_AFTER_LIMIT_S * 1000}, not ${JSON.stringify(ms)}`;
}

function assertValid(message: string | undefined): void {
  if (message) throw new Error(message);
}

/**
 * Search attributes (history events) only on change and at most every interval (`final`: on
 * change only); details always.
 */
function publish(m: MonitorModel, last: string, nowMs: number, opts: { final?: boolean; state?: string } = {}): string {
  const shown = shownOf(m, opts.state);
  const key = shownKey(shown);
  setCurrentDetails(detailsMarkdown(m.stats(nowMs), shown.state, nowMs));
  const modeChanged = !last.startsWith(`${shown.state}|`);
  if (key === last || (!opts.final && !modeChanged && nowMs - m.state.lastSearchAttributesMs < m.state.options.searchAttributeIntervalMs)) return last;
  m.state.lastSearchAttributesMs = nowMs;
  upsertSearchAttributes(monitorSearchAttributes(shown));
  return key;
}

