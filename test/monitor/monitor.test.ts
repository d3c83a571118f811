import fs from 'node:fs';
import path from 'node:path';
import { Client, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createTimeSkippingEnv } from '../support/temporal';
import { chunksOf, indexOf, monitorWorker, scriptedActivities, sendTimes } from '../support/monitorHarness';
import { ceilings, maxInAnyWindow } from '../../src/politeness/pacing';
import { slotCount } from '../../src/activities/pacedRunner';
import { crawlBatchWorkflow } from '../../src/workflows/batch';
import { crawlMonitorWorkflow } from '../../src/workflows/monitor';
import { addWorkSignal, pauseUpdate, resumeUpdate, setMaxConnectionsUpdate, setMaxRateUpdate, setMaxRetryAfterUpdate, setRateUpdate, statsQuery, stopUpdate } from '../../src/workflows/messages';
import { CRAWL_DONE, CRAWL_SOURCE, CRAWL_STATE, FINISHED, monitorSearchAttributes } from '../../src/temporal/searchAttributes';
import { MonitorModel, monitorWorkflowId, shownOf } from '../../src/workflows/monitorState';
import { WORKFLOWS_PATH } from '../../src/workers/worker';
import { PATCH_LEVEL } from '../../src/workflows/patchLevel';
import { CHUNK_UNREADABLE } from '../../src/shared/storeOutage';
import { actOnHalted } from '../../src/crawl/run';
import type { BatchItem, FetchBatchInput, FetchBatchResult, OpenLimitHint, RedirectHop, RequestOutcome, SourceConfig, WorkChunk } from '../../src/shared/types';

/** An update its validator refused, saying why. */
const rejection = (pattern: RegExp) => ({ cause: expect.objectContaining({ message: expect.stringMatching(pattern) }) });

describe('crawl monitor (time-skipping server)', () => {
  let env: TestWorkflowEnvironment;
  // A fresh server per test: time-skipping is global to a server, so one test's leftovers
  // (a workflow task queued for a worker that has shut down) must not freeze the next one's clock.
  beforeEach(async () => { env = await createTimeSkippingEnv(); });
  afterEach(async () => { await env?.teardown(); });

  let n = 0;
  // A monitor started by hand must have its source's id (monitorIdProblem).
  const ids = (source: string) => { n += 1; return { taskQueue: `monitor-${n}`, workflowId: monitorWorkflowId(source) }; };
  /** The signals a workflow sent, by name, in order. */
  const signalsSent = (h: temporal.api.history.v1.IHistory) => (h.events ?? []).flatMap((e) => (e.signalExternalWorkflowExecutionInitiatedEventAttributes ? [e.signalExternalWorkflowExecutionInitiatedEventAttributes.signalName] : []));
  /** A history's events of one kind. */
  const eventsOf = (h: temporal.api.history.v1.IHistory, kind: keyof temporal.api.history.v1.IHistoryEvent) => (h.events ?? []).filter((e) => e[kind]);
  /** An event's summary for the Web UI (user metadata), undefined when it has none. */
  const summaryOf = (e: temporal.api.history.v1.IHistoryEvent): unknown => {
    const data = e.userMetadata?.summary?.data;
    return data ? JSON.parse(Buffer.from(data).toString()) : undefined;
  };
  /** A workflow's start input, from its first history event. */
  const startInput = (h: temporal.api.history.v1.IHistory) => JSON.parse(Buffer.from(h.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!.data!).toString());
  const gapsBetweenGrants = (starts: number[]) => {
    const s = [...starts].sort((a, b) => a - b);
    return s.slice(1).map((t, i) => t - s[i]!);
  };

  it('pauses granting for 60 s when more than 10% of a minute\'s requests fail, then resumes at a reduced rate', async () => {
    const { taskQueue, workflowId } = ids('ten-percent.test');
    // One first attempt in 8 fails (retries succeed): ~11% of requests, whatever the grant sizes.
    const { grants, acts } = scriptedActivities((url, attempt) => (indexOf(url) % 8 === 7 && attempt === 1 ? { cls: 'error', status: 500 } : { cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId,
      args: [{ source: 'ten-percent.test', config: { rate: 5 }, work: chunksOf('ten-percent.test', 400, 100) }],
    }));
    expect(stats.alerts.some((a) => /cooling: \d+\/\d+ requests failed/.test(a))).toBe(true);
    // No batch got a grant to act on for 60 s after the breaker tripped.
    expect(Math.max(...gapsBetweenGrants(grants.map((g) => g.scheduledMs)))).toBeGreaterThanOrEqual(60_000);
    expect(stats.alerts.some((a) => /resumed: after temporary halt/.test(a))).toBe(true);
    expect(stats.counts.done).toBe(400);
    expect(stats.urls).toMatchObject({ total: 400, finished: 400 });
  });

  it('does not cool a site for its few broken images failing again, each counted once', async () => {
    const { taskQueue, workflowId } = ids('broken-few.test');
    // One URL in 20 answers 500 every time. Its second and third tries come after the rest of
    // their chunk, together: counted, they made 10% of a minute's requests and cooled the site.
    const scripted = scriptedActivities((url) => (indexOf(url) % 20 === 7 ? { cls: 'error', status: 500 } : { cls: 'done', status: 200 }));
    const retried: BatchItem[] = [];
    const acts = { ...scripted.acts, async fetchBatch(input: FetchBatchInput) { retried.push(...input.items.filter((item) => item.attempt > 1)); return scripted.acts.fetchBatch(input); } };
    const worker = await monitorWorker(env, taskQueue, acts);
    const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source: 'broken-few.test', config: { rate: 10 }, work: chunksOf('broken-few.test', 1000, 500) }],
    });
    const stats = await worker.runUntil(handle.result());
    // Its result names the state as its CrawlState and details do (its mode stays running).
    expect(stats.state).toBe('finished');
    expect(stats.alerts.filter((a) => /cooling|halt/.test(a))).toEqual([]);
    expect(stats.counts).toMatchObject({ done: 950, error: 50, retries: 100 });
    expect(stats.rate).toBe(10);
    // The batches said which failures were repeats: 2 of each broken URL's 3.
    const batchHistory = await env.client.workflow.getHandle(`${workflowId}/batch:c0`).fetchHistory();
    const reported = (batchHistory.events ?? []).flatMap((e) => {
      const a = e.signalExternalWorkflowExecutionInitiatedEventAttributes;
      if (a?.signalName !== 'reportOutcomes') return [];
      return (JSON.parse(Buffer.from(a.input!.payloads![0]!.data!).toString()) as { outcomes: RequestOutcome[] }).outcomes;
    });
    expect(reported.filter((o) => o.cls === 'error').map((o) => `${o.attempt}${o.repeat ? ' repeat' : ''}`).sort()).toEqual([
      ...Array(25).fill('1'), ...Array(25).fill('2 repeat'), ...Array(25).fill('3 repeat'),
    ]);
    // Their activities were told too: a repeat does not count towards five errors in a row.
    expect(retried).toHaveLength(100);
    expect(retried.every((item) => item.failedBefore === true)).toBe(true);
  });

  it('still halts a site of 30 URLs that fails every request: 50 failures in a row, 30 of them fresh', async () => {
    const { taskQueue, workflowId } = ids('small-down.test');
    const { acts } = scriptedActivities(() => ({ cls: 'error', status: 502 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source: 'small-down.test', config: { rate: 5 }, work: chunksOf('small-down.test', 30, 30) }],
    });
    const stats = await worker.runUntil(async () => {
      for (let i = 0; i < 100; i++) {
        const st = await handle.query(statsQuery);
        if (st.state === 'halted' || st.urls.finished === 30) return st;
        await env.sleep(10_000);
      }
      throw new Error('neither halted nor finished');
    });
    expect(stats.state).toBe('halted');
    expect(stats.haltReason).toMatch(/last 50 requests all failed/);
    expect(stats.breaker.consecutiveErrors).toBeGreaterThanOrEqual(50);
    // Halted with URLs that still have a try left: kept for the operator.
    expect(stats.urls.finished).toBeLessThan(30);
    await handle.terminate();
  });

  it('keeps a temporary halt through an operator\'s pause and resume (crawl pause --all, then resume --all)', async () => {
    const { taskQueue, workflowId } = ids('paused-cooling.test');
    const { grants, acts } = scriptedActivities((url, attempt) => (indexOf(url) % 8 === 7 && attempt === 1 ? { cls: 'error', status: 500 } : { cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId,
        args: [{ source: 'paused-cooling.test', config: { rate: 5 }, work: chunksOf('paused-cooling.test', 400, 100) }],
      });
      let stats = await handle.query(statsQuery);
      for (let i = 0; i < 100 && stats.state !== 'cooling'; i++) {
        await env.sleep(2_000);
        stats = await handle.query(statsQuery);
      }
      expect(stats.state).toBe('cooling');
      // The Web UI's details say how long the rest takes: at least the minute's halt.
      const details = (await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails;
      expect(details).toMatch(/URLs \d+\/400 finished \(about \dm left at this pace, to about \d{4}-\d\d-\d\dT\d\d:\d\dZ\)/);
      expect(await handle.executeUpdate(pauseUpdate)).toBe('paused');
      expect(await handle.query(statsQuery)).toMatchObject({ state: 'paused', coolingUntil: stats.coolingUntil });
      expect(await handle.executeUpdate(resumeUpdate, { args: [{}] })).toBe(`cooling until ${stats.coolingUntil} (a temporary halt: no requests until then)`);
      expect((await handle.query(statsQuery)).state).toBe('cooling');
      const final = await handle.result();
      // As without the operator: no batch got a grant to act on for the halt's 60 s.
      expect(Math.max(...gapsBetweenGrants(grants.map((g) => g.scheduledMs)))).toBeGreaterThanOrEqual(60_000);
      expect(final.alerts.some((a) => /resumed: after temporary halt/.test(a))).toBe(true);
      expect(final.counts.done).toBe(400);
      await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, await handle.fetchHistory(), workflowId);
    });
  });

  it('replays a monitor that an operator paused and resumed while cooling, recorded before resume kept the halt and before grants were revoked', async () => {
    // Recorded with the earlier code: its resume answered 'running' and granting started again
    // at once, and its pause revoked no grants, so this history only replays when those code
    // paths are kept for it (patched()).
    const history = (file: string) => temporal.api.history.v1.History.decode(fs.readFileSync(path.join(__dirname, 'histories', file)));
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, history('pause-resume-while-cooling.before-patch.bin'), 'crawl-monitor:paused-cooling.test');
    // One of its batches, recorded by the same code: each grant's activity now runs in a cancellation scope of its own.
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, history('batch-of-paused-cooling.before-patch.bin'), 'crawl-monitor:paused-cooling.test/batch:c0');
  });

  it('replays a monitor started by hand under another id than its source\'s before that was refused', async () => {
    // Recorded with the earlier code (`temporal workflow start --workflow-id crawl-monitor:museum.example`
    // for source "museum", one URL crawled): it runs on as it did rather than failing on replay.
    const history = temporal.api.history.v1.History.decode(fs.readFileSync(path.join(__dirname, 'histories', 'misnamed-monitor.before-check.bin')));
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, history, 'crawl-monitor:museum.example');
  });

  it('replays a source whose last grant was planned before last grants had spare slots for a late start', async () => {
    // Recorded with the earlier code: one chunk of 12 URLs at 1 req/s whose second grant (3 URLs,
    // two spares) missed a slot, so a third grant followed it at the end of the second's window.
    // The code now gives such a grant five spares, and its window ends later: this history only
    // replays when its planning is kept for it (patched()).
    const history = (file: string) => temporal.api.history.v1.History.decode(fs.readFileSync(path.join(__dirname, 'histories', file)));
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, history('tail-grant.before-patch.bin'), 'crawl-monitor:tail-slack.test');
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, history('batch-of-tail-grant.before-patch.bin'), 'crawl-monitor:tail-slack.test/batch:c0');
  });

  it('takes grants whose requests the worker\'s network kept back as no failure of the site and no busy worker, and finishes when it is back', async () => {
    const { taskQueue, workflowId } = ids('network-down.test');
    const scripted = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    let downGrants = 3;
    const acts = {
      ...scripted.acts,
      // As the real activity while the worker's network is down: nothing sent, every URL handed back.
      async fetchBatch(input: FetchBatchInput): Promise<FetchBatchResult> {
        if (downGrants <= 0) return scripted.acts.fetchBatch(input);
        downGrants -= 1;
        return { outcomes: [], unused: input.items.map((_, i) => i), missedSlots: input.items.length, networkDown: true };
      },
    };
    const worker = await monitorWorker(env, taskQueue, acts);
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source: 'network-down.test', config: { rate: 2 }, work: chunksOf('network-down.test', 200, 100) }],
    }));
    expect(downGrants).toBe(0);
    expect(stats.counts).toMatchObject({ done: 200, error: 0 });
    expect(stats.urls).toMatchObject({ total: 200, finished: 200 });
    expect(stats.alerts.filter((a) => /cooling|halt/.test(a))).toEqual([]);
    expect(stats.tokens.missed).toBeGreaterThan(0);
    expect(stats.tokens.missRate).toBe(0);
    // A later grant sent: the note is over.
    expect(stats.networkDownAt).toBeNull();
    // The batches told the monitor why their slots passed.
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const reports = (history.events ?? []).flatMap((e) => {
      const data = e.workflowExecutionSignaledEventAttributes?.input?.payloads?.[0]?.data;
      return data ? [JSON.parse(Buffer.from(data).toString()) as { networkDown?: boolean }] : [];
    });
    expect(reports.filter((r) => r.networkDown === true)).toHaveLength(3);
  });

  it('keeps the share of requests that waited for a connection to a slow site, as its grants report them', async () => {
    const { taskQueue, workflowId } = ids('slow-site.test');
    const scripted = scriptedActivities(() => ({ cls: 'done', status: 200, ttfbMs: 3_000 }));
    const acts = {
      ...scripted.acts,
      // As the real activity at a site holding all 64 of the worker's connections: half its requests waited for one.
      async fetchBatch(input: FetchBatchInput): Promise<FetchBatchResult> {
        const result = await scripted.acts.fetchBatch(input);
        return { ...result, missedSlots: 0, connectionWaits: { requests: Math.floor(result.outcomes.length / 2), perSite: 64 } };
      },
    };
    const worker = await monitorWorker(env, taskQueue, acts);
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source: 'slow-site.test', config: { rate: 30 }, work: chunksOf('slow-site.test', 600, 300) }],
    }));
    expect(stats.counts.done).toBe(600);
    expect(stats.connectionWaits?.perSite).toBe(64);
    expect(stats.connectionWaits?.share).toBeGreaterThanOrEqual(0.3); // a running average from 0 over a few grants
    expect(stats.connectionWaits?.share).toBeLessThanOrEqual(0.5);
  });

  it('gives a source\'s last grant spare slots for a start up to 5 s late', async () => {
    const { taskQueue, workflowId } = ids('tail-slack.test');
    const { grants, acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source: 'tail-slack.test', config: { rate: 1 }, work: chunksOf('tail-slack.test', 12, 12) }],
    }));
    expect(stats.counts.done).toBe(12);
    // The whole source fits in one window (no short first one): one grant, the 12 URLs and 5 spare slots.
    expect(grants.map((g) => g.slots)).toEqual([12]);
    expect(slotCount(grants[0]!)).toBe(12 + 5);
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, await env.client.workflow.getHandle(workflowId).fetchHistory(), workflowId);
  });

  it('takes its patches from the patch level its input carries: no marker or TemporalChangeVersion upsert per patch, the same grants', async () => {
    const patchEvents = (h: temporal.api.history.v1.IHistory) => (h.events ?? []).filter((e) =>
      e.markerRecordedEventAttributes?.markerName === 'core_patch' || e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.TemporalChangeVersion).length;
    const crawl = async (patchLevel?: number) => {
      const source = `levels-${patchLevel ?? 'none'}.test`;
      const { taskQueue, workflowId } = ids(source);
      const { grants, acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
      const worker = await monitorWorker(env, taskQueue, acts);
      const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
        taskQueue, workflowId, args: [{ source, config: { rate: 1 }, options: { smallSourceUrls: 0 }, work: chunksOf(source, 12, 12), ...(patchLevel === undefined ? {} : { patchLevel }) }],
      }));
      expect(stats.counts.done).toBe(12);
      const monitor = await env.client.workflow.getHandle(workflowId).fetchHistory();
      const batch = await env.client.workflow.getHandle(grants[0]!.batchId).fetchHistory();
      await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, monitor, workflowId);
      await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, batch, grants[0]!.batchId);
      return { grants, monitor, batch };
    };
    // Started without a level (by hand, or by code from before levels): patched() as before.
    const unlevelled = await crawl();
    expect(patchEvents(unlevelled.monitor)).toBe(16); // 8 patches: a marker and an upsert each
    // Its batch is a new workflow, started by this code at this code's level.
    expect(patchEvents(unlevelled.batch)).toBe(0);
    const levelled = await crawl(PATCH_LEVEL);
    expect(patchEvents(levelled.monitor)).toBe(0);
    expect(patchEvents(levelled.batch)).toBe(0);
    // A batch of a monitor from before levels took 3 patches with markers (the batch's recorded history).
    expect(patchEvents(temporal.api.history.v1.History.decode(fs.readFileSync(path.join(__dirname, 'histories', 'batch-of-patch-markers.session26.bin'))))).toBe(6);
    // The patches are in effect, not skipped: the whole source in one window, with spare slots.
    expect(levelled.grants.map((g) => [g.slots, slotCount(g)])).toEqual(unlevelled.grants.map((g) => [g.slots, slotCount(g)]));
    expect(levelled.grants.map((g) => [g.slots, slotCount(g)])).toEqual([[12, 17]]);
  });

  it('ends a batch with its last report (finished, after the done-marker), not a batchFinished signal of its own', async () => {
    const { taskQueue, workflowId } = ids('finish.test');
    const { grants, doneMarkers, acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source: 'finish.test', config: { rate: 2 }, work: chunksOf('finish.test', 30, 10, { spooled: true }), patchLevel: PATCH_LEVEL }],
    }));
    expect(stats.counts.done).toBe(30);
    expect(stats.urls).toMatchObject({ total: 30, finished: 30 });
    expect(stats.batches).toMatchObject({ active: 0, finished: 3 });
    expect(doneMarkers.map((d) => d.chunkId).sort()).toEqual(['c0', 'c10', 'c20']);
    for (const batchId of new Set(grants.map((g) => g.batchId))) {
      const history = await env.client.workflow.getHandle(batchId).fetchHistory();
      expect(signalsSent(history)).not.toContain('batchFinished');
      const reports = (history.events ?? []).flatMap((e) => {
        const a = e.signalExternalWorkflowExecutionInitiatedEventAttributes;
        return a?.signalName === 'reportOutcomes' ? [JSON.parse(Buffer.from(a.input!.payloads![0]!.data!).toString())] : [];
      });
      expect(reports.at(-1).finished).toMatchObject({ urls: 10 });
      expect(reports.slice(0, -1).every((r) => r.finished === undefined)).toBe(true);
      await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, history, batchId);
    }
    // A batch of the code before sent batchFinished after its last report (its recorded history).
    expect(signalsSent(temporal.api.history.v1.History.decode(fs.readFileSync(path.join(__dirname, 'histories', 'batch-of-patch-markers.session26.bin'))))).toContain('batchFinished');
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, await env.client.workflow.getHandle(workflowId).fetchHistory(), workflowId);
  });

  it('starts a batch with its first grant in its input: no token request, no grant signal, a third fewer history events', async () => {
    const { taskQueue, workflowId } = ids('first.test');
    const { grants, doneMarkers, acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    const source = 'first.test';
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      // A child batch: a source this small has its batch run by its monitor unless told otherwise (below).
      taskQueue, workflowId, args: [{ source, config: { rate: 1 }, options: { smallSourceUrls: 0 }, work: chunksOf(source, 3, 3, { spooled: true }), patchLevel: PATCH_LEVEL }],
      // As `crawl start` starts a monitor.
      typedSearchAttributes: monitorSearchAttributes(shownOf(MonitorModel.fromInput({ source, config: { rate: 1 } }, Date.now()))),
    }));
    expect(stats.counts.done).toBe(3);
    expect(grants).toHaveLength(1);
    const batchId = grants[0]!.batchId;
    const monitorHistory = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const batchHistory = await env.client.workflow.getHandle(batchId).fetchHistory();
    expect(signalsSent(batchHistory)).toEqual(['reportOutcomes']);
    expect(signalsSent(monitorHistory)).toEqual([]);
    const input = startInput(batchHistory);
    expect(input).toMatchObject({ asked: true, firstGrant: { batchId, floatMs: 15_000 } });
    // Summaries for the Web UI: the batch's (its list row and page) and its fetch activity's.
    expect(eventsOf(batchHistory, 'workflowExecutionStartedEventAttributes').map(summaryOf)).toEqual(['first.test: chunk c0, 3 URLs']);
    expect(eventsOf(batchHistory, 'activityTaskScheduledEventAttributes').map(summaryOf)).toEqual(['grant 1: 3 URLs at 1/s']);
    // The source's last window: the batch may slide it (it did when it took it after its first slot's lead).
    const slidMs = grants[0]!.startMs - input.firstGrant.startMs;
    expect(slidMs).toBeGreaterThanOrEqual(0);
    expect(slidMs).toBeLessThanOrEqual(15_000);
    expect(grants[0]!.endMs - grants[0]!.startMs).toBeCloseTo(input.firstGrant.endMs - input.firstGrant.startMs, 6);
    // Bookkeeping: one local activity for the chunk and what earlier runs recorded; the done-marker
    // left by the fetch activity after its records; the monitor's search attributes set at its
    // start and upserted once, at the end.
    expect(eventsOf(batchHistory, 'markerRecordedEventAttributes')).toHaveLength(1);
    expect(doneMarkers).toEqual([{ chunkId: 'c0', by: 'fetch' }]);
    const upserts = eventsOf(monitorHistory, 'upsertWorkflowSearchAttributesEventAttributes');
    expect(upserts).toHaveLength(1);
    const description = await env.client.workflow.getHandle(workflowId).describe();
    expect([description.typedSearchAttributes.get(CRAWL_SOURCE), description.typedSearchAttributes.get(CRAWL_DONE)]).toEqual([source, 3]);
    // Not `running`: the Web UI's list of running crawls leaves it out.
    expect(description.typedSearchAttributes.get(CRAWL_STATE)).toBe(FINISHED);
    // 54 events for such a source when the batch asked for its first grant; 36-38 without (an
    // extra workflow task when messages arrive apart), session 28; 32 with the bookkeeping above.
    expect((monitorHistory.events?.length ?? 0) + (batchHistory.events?.length ?? 0)).toBeLessThanOrEqual(40);
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, monitorHistory, workflowId);
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, batchHistory, batchId);
  });

  it.each([
    ['one chunk, its batch run by the monitor, the grant with its start', 8, 8],
    ['two chunks, child batches that ask for their grants', 16, 8],
  ])('lets a first grant of one slot float (%s): an activity that starts 400 ms after it still sends, and the next window opens a spacing after that send', async (_, urls, chunk) => {
    // Measured: a monitor's first workflow task on a fresh worker took 311 ms, 11 ms more than the
    // lead, and a source at 0.1 req/s lost its first window (one slot): 10 s, and "workers behind".
    const source = `short-first-${urls}.test`;
    const { taskQueue, workflowId } = ids(source);
    const { acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const LATE_MS = 400;
    const schedules: FetchBatchInput['schedule'][] = [];
    const sends: number[] = [];
    // As the real activity (runPaced) whose first run starts LATE_MS after its first slot: the
    // slots move later by that, and those moved past the last one (plus the float) are lost.
    const late = {
      ...acts,
      async fetchBatch(input: FetchBatchInput): Promise<FetchBatchResult> {
        const s = input.schedule;
        const lateMs = schedules.length === 0 ? LATE_MS : 0;
        schedules.push(s);
        const slots = slotCount(s);
        const lastMs = s.startMs + (slots - 1) * s.intervalMs + (s.floatMs ?? 0);
        const at = Array.from({ length: slots }, (_, j) => s.startMs + j * s.intervalMs + lateMs).filter((t) => t <= lastMs).slice(0, input.items.length);
        sends.push(...at);
        return {
          outcomes: at.map((atMs, k) => ({ url: input.items[k]!.url, cls: 'done', status: 200, ttfbMs: 20, sent: true, final: true, attempt: input.items[k]!.attempt, atMs })),
          unused: input.items.slice(at.length).map((_, i) => i + at.length),
          missedSlots: at.length < input.items.length ? slots - at.length : 0,
          ...(at.length > 0 ? { lastSendMs: at[at.length - 1]! } : {}),
        };
      },
    };
    const worker = await monitorWorker(env, taskQueue, late);
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source, config: { rate: 0.1 }, work: chunksOf(source, urls, chunk, { spooled: true }), patchLevel: PATCH_LEVEL }],
    }));
    expect(stats.counts.done).toBe(urls);
    expect(stats.tokens.missed).toBe(0);
    const intervalMs = schedules[0]!.intervalMs;
    expect(slotCount(schedules[0]!)).toBe(1);
    expect(schedules[0]!.floatMs).toBeGreaterThanOrEqual(LATE_MS);
    expect(sends[0]).toBe(schedules[0]!.startMs + LATE_MS);
    // The float is not kept from the source: its next window opens a spacing after the late send.
    expect(schedules[1]!.startMs - sends[0]!).toBeCloseTo(intervalMs, 0);
    for (let k = 1; k < sends.length; k++) expect(sends[k]! - sends[k - 1]!).toBeGreaterThanOrEqual(intervalMs - 1);
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, await env.client.workflow.getHandle(workflowId).fetchHistory(), workflowId);
  });

  it('lets a slow source\'s windows float: an activity that starts 20 s late still sends, and the next window opens a spacing after that send', async () => {
    const source = 'slow.test';
    const { taskQueue, workflowId } = ids(source);
    const { acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const LATE_MS = 20_000;
    const schedules: FetchBatchInput['schedule'][] = [];
    const sends: number[] = [];
    // As the real activity on a busy worker: it starts 20 s into its window, which it may use only
    // when the window floats that far (runPaced); otherwise every slot is missed.
    const late = {
      ...acts,
      async fetchBatch(input: FetchBatchInput): Promise<FetchBatchResult> {
        schedules.push(input.schedule);
        const slots = slotCount(input.schedule);
        if ((input.schedule.floatMs ?? 0) < LATE_MS) return { outcomes: [], unused: input.items.map((_, i) => i), missedSlots: slots };
        const atMs = input.schedule.startMs + LATE_MS;
        sends.push(atMs);
        const first = input.items[0]!;
        return {
          outcomes: [{ url: first.url, cls: 'done', status: 200, ttfbMs: 20, sent: true, final: true, attempt: first.attempt, atMs }],
          unused: input.items.slice(1).map((_, i) => i + 1), missedSlots: 0, lastSendMs: atMs,
        };
      },
    };
    const worker = await monitorWorker(env, taskQueue, late);
    // A child batch (smallSourceUrls: 0): the own batch's path is the same runBatch.
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source, config: { rate: 0.01 }, options: { smallSourceUrls: 0 }, work: chunksOf(source, 4, 4, { spooled: true }), patchLevel: PATCH_LEVEL }],
    }));
    expect(stats.counts.done).toBe(4);
    expect(stats.tokens.missed).toBe(0);
    expect(sends).toHaveLength(4);
    const intervalMs = schedules[0]!.intervalMs;
    expect(intervalMs).toBeGreaterThan(100_000); // 0.01 req/s, paced 3% below
    for (const s of schedules) expect(s.floatMs).toBeGreaterThanOrEqual(LATE_MS);
    // Never closer than a spacing, and no float's length later than needed: each window opens
    // where the send before it leaves the timeline free (reclaimWindowTail), not where the
    // window before it and its float would have ended.
    for (let k = 1; k < sends.length; k++) {
      expect(sends[k]! - sends[k - 1]!).toBeGreaterThanOrEqual(intervalMs);
      expect(schedules[k]!.startMs - sends[k - 1]!).toBeCloseTo(intervalMs, 0);
    }
  });

  it('runs a small source\'s batch itself: one workflow of 14 history events instead of two of 33, the same grant, records and done-marker', async () => {
    const patchEvents = (h: temporal.api.history.v1.IHistory) => (h.events ?? []).filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch').length;
    const crawl = async (source: string, patchLevel?: number) => {
      const { taskQueue, workflowId } = ids(source);
      const { grants, doneMarkers, records, acts } = scriptedActivities((url) => (indexOf(url) === 1 ? { cls: 'linkrot', status: 404 } : { cls: 'done', status: 200 }));
      const worker = await monitorWorker(env, taskQueue, acts);
      const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
        taskQueue, workflowId, args: [{ source, config: { rate: 1 }, work: chunksOf(source, 3, 3, { spooled: true }), ...(patchLevel === undefined ? {} : { patchLevel }) }],
        typedSearchAttributes: monitorSearchAttributes(shownOf(MonitorModel.fromInput({ source, config: { rate: 1 } }, Date.now()))),
      }));
      const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
      await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, history, workflowId);
      return { stats, grants, doneMarkers, records, history, workflowId };
    };
    const { stats, grants, doneMarkers, records, history, workflowId } = await crawl('own.test', PATCH_LEVEL);
    expect(stats.counts).toMatchObject({ done: 2, linkrot: 1, error: 0 });
    expect(stats.urls).toMatchObject({ total: 3, finished: 3 });
    expect(stats.batches).toMatchObject({ active: 0, finished: 1 });
    expect(eventsOf(history, 'startChildWorkflowExecutionInitiatedEventAttributes')).toHaveLength(0);
    expect(signalsSent(history)).toEqual([]);
    // The whole source in one grant, as a child batch's first grant in its input.
    expect(grants).toHaveLength(1);
    expect(grants[0]).toMatchObject({ batchId: `${workflowId}/batch:c0`, slots: 3, sent: 3 });
    expect(records.map((r) => r.url).sort()).toEqual(chunksOf('own.test', 3, 3)[0]!.urls!.slice().sort());
    expect(doneMarkers).toEqual([{ chunkId: 'c0', by: 'fetch' }]);
    const activities = eventsOf(history, 'activityTaskScheduledEventAttributes').map((e) => e.activityTaskScheduledEventAttributes!.activityType?.name);
    expect(activities).toEqual(['fetchBatch']);
    // Labelled for the Web UI's timeline and pending activities (an activity id is a bare number).
    expect(eventsOf(history, 'activityTaskScheduledEventAttributes').map(summaryOf)).toEqual(['grant 1: 3 URLs at 1/s']);
    // Started, addWork-free; a workflow task; the chunk (a local activity's marker); the fetch;
    // a workflow task; the final search attributes; completed. A child batch: 32-33 in all.
    expect(history.events!.length).toBeLessThanOrEqual(14);
    // A monitor without a level asks patched() for its own patches, the new one included; the
    // batch it runs takes the batch patches from the level that brought it, without markers.
    const unlevelled = await crawl('own-unlevelled.test');
    expect(unlevelled.stats.counts).toMatchObject({ done: 2, linkrot: 1 });
    expect(eventsOf(unlevelled.history, 'startChildWorkflowExecutionInitiatedEventAttributes')).toHaveLength(0);
    expect(patchEvents(unlevelled.history)).toBe(9);
  });

  it('writes its final search attributes once: not again when the loop has just written the same values', async () => {
    const { taskQueue, workflowId } = ids('long.test');
    const { acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    const source = 'long.test';
    // Updates as often as anything changes (a source that runs longer than the 15 s between
    // updates, at its last report): the loop writes the values the monitor ends with.
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source, config: { rate: 1 }, options: { searchAttributeIntervalMs: 1 }, work: chunksOf(source, 40, 20, { spooled: true }), patchLevel: PATCH_LEVEL }],
      typedSearchAttributes: monitorSearchAttributes(shownOf(MonitorModel.fromInput({ source, config: { rate: 1 } }, Date.now()))),
    }));
    expect(stats.counts.done).toBe(40);
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const upserted = eventsOf(history, 'upsertWorkflowSearchAttributesEventAttributes').map((e) => {
      const fields = e.upsertWorkflowSearchAttributesEventAttributes!.searchAttributes!.indexedFields!;
      return Object.fromEntries(Object.entries(fields).map(([k, p]) => [k, JSON.parse(Buffer.from(p.data!).toString())]));
    });
    expect(upserted.at(-1)).toMatchObject({ CrawlDone: 40, CrawlSource: source, CrawlState: FINISHED });
    expect(upserted.slice(0, -1).map((u) => u.CrawlState)).not.toContain(FINISHED);
    // No upsert writes what the one before it wrote.
    upserted.slice(1).forEach((u, i) => expect(u).not.toEqual(upserted[i]));
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, history, workflowId);
  });

  it('opens the next window one spacing after a finished grant\'s last request, not after the spare slots it left', async () => {
    const grantsFor = async (reportLastSend: boolean) => {
      const source = `tail-${reportLastSend}.test`;
      const { taskQueue, workflowId } = ids(source);
      // URL 0 fails its first try: it needs a second grant, after the first grant's activity has returned.
      const { grants, acts } = scriptedActivities((url, attempt) => (indexOf(url) === 0 && attempt === 1 ? { cls: 'error', status: 500 } : { cls: 'done', status: 200 }), { reportLastSend });
      const worker = await monitorWorker(env, taskQueue, acts);
      const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
        taskQueue, workflowId, args: [{ source, config: { rate: 1 }, work: chunksOf(source, 3, 3), patchLevel: PATCH_LEVEL }],
      }));
      expect(stats.counts.done).toBe(3);
      await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, await env.client.workflow.getHandle(workflowId).fetchHistory(), workflowId);
      return grants;
    };
    const [g1, g2] = await grantsFor(true);
    // The source's last window has spare slots for a late start; three of them served requests.
    expect(slotCount(g1!)).toBeGreaterThan(3);
    expect(g1!.sent).toBe(3);
    expect(g2!.startMs).toBeCloseTo(g1!.startMs + 3 * g1!.intervalMs, 0);
    expect(maxInAnyWindow(sendTimes([g1!, g2!]), 1_000)).toBe(1);
    // An activity that does not say when it last sent (older workers) leaves the window to its end.
    const [o1, o2] = await grantsFor(false);
    expect(o2!.startMs).toBeGreaterThanOrEqual(o1!.endMs);
  });

  it('replays a source recorded with patch markers and no patch level (the code of session 26)', async () => {
    const history = (file: string) => temporal.api.history.v1.History.decode(fs.readFileSync(path.join(__dirname, 'histories', file)));
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, history('patch-markers.session26.bin'), 'crawl-monitor:patch-markers.test');
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, history('batch-of-patch-markers.session26.bin'), 'crawl-monitor:patch-markers.test/batch:c0');
  });

  it('slows a source down while its TTFB climbs as the crawl goes on (a queue building up at the site)', async () => {
    const { taskQueue, workflowId } = ids('queueing.test');
    let requests = 0;
    // 70 ms, then 25 ms more with every request, up to 3 s: the site does not refuse anything.
    const { grants, acts } = scriptedActivities(() => ({ cls: 'done', status: 200, ttfbMs: Math.min(3_000, 70 + 25 * requests++) }));
    const worker = await monitorWorker(env, taskQueue, acts);
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source: 'queueing.test', config: { rate: 5 }, work: chunksOf('queueing.test', 300, 300) }],
    }));
    expect(stats.counts.done).toBe(300);
    expect(stats.alerts.some((a) => /latency-slowdown/.test(a))).toBe(true);
    // Later windows' slots are at least twice as far apart as the first's (5/s less the pacing margin).
    expect(Math.max(...grants.map((g) => g.intervalMs))).toBeGreaterThan(2 * grants[0]!.intervalMs);
  });

  it('slows a source down while its downloads slow as they pile up, its TTFB low (a site whose uplink is full)', async () => {
    const { taskQueue, workflowId } = ids('uplink.test');
    let requests = 0;
    // Large images: 2 s a MiB for the first 40, then 40 s a MiB (a queue of downloads sharing the link).
    const { grants, acts } = scriptedActivities(() => ({ cls: 'done', status: 200, ttfbMs: 20, msPerMib: requests++ < 40 ? 2_000 : 40_000 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source: 'uplink.test', config: { rate: 5 }, work: chunksOf('uplink.test', 300, 300) }],
    }));
    expect(stats.counts.done).toBe(300);
    expect(stats.alerts.some((a) => /latency-slowdown: median download speed below a third of its baseline 512 KiB\/s/.test(a))).toBe(true);
    expect(Math.max(...grants.map((g) => g.intervalMs))).toBeGreaterThan(2 * grants[0]!.intervalMs);
  });

  it('keeps granting at 9% errors', async () => {
    const { taskQueue, workflowId } = ids('nine-percent.test');
    // Errors spread evenly: every prefix of the crawl has at most 9% errors.
    const isError = (i: number) => Math.floor((i + 1) * 0.09) > Math.floor(i * 0.09);
    const { grants, acts } = scriptedActivities((url, attempt) => (isError(indexOf(url)) && attempt === 1 ? { cls: 'error', status: 500 } : { cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId,
      args: [{ source: 'nine-percent.test', config: { rate: 5 }, work: chunksOf('nine-percent.test', 400, 400) }],
    }));
    expect(stats.alerts.filter((a) => /cooling/.test(a))).toEqual([]);
    expect(Math.max(...gapsBetweenGrants(grants.map((g) => g.scheduledMs)))).toBeLessThan(60_000);
    expect(stats.counts.done).toBe(400);
  });

  it('halts after 50 consecutive failures, loses nothing pending, and resume finishes the crawl', async () => {
    const { taskQueue, workflowId } = ids('down.test');
    let siteDown = true;
    const { grants, records, acts } = scriptedActivities(() => (siteDown ? { cls: 'error', status: 502 } : { cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId,
        args: [{ source: 'down.test', config: { rate: 10 }, work: chunksOf('down.test', 300, 100), options: { maxAttempts: 20 } }],
      });
      let stats = await handle.query(statsQuery);
      for (let i = 0; i < 30 && stats.state !== 'halted'; i++) {
        await env.sleep(30_000);
        stats = await handle.query(statsQuery);
      }
      expect(stats.state).toBe('halted');
      expect(stats.haltReason).toMatch(/last 50 requests all failed/);
      expect(stats.breaker.consecutiveErrors).toBeGreaterThanOrEqual(50);
      expect(stats.alerts.some((a) => a.includes('HALTED'))).toBe(true);
      expect((await handle.describe()).typedSearchAttributes.get(CRAWL_STATE)).toBe('halted');

      // Halted means halted: an hour passes with no grant and nothing is lost.
      const grantsAtHalt = grants.length;
      await env.sleep(3_600_000);
      stats = await handle.query(statsQuery);
      expect(grants.length).toBe(grantsAtHalt);
      expect(stats.state).toBe('halted');
      expect(stats.urls.finished).toBe(0);
      expect(records).toEqual([]);

      siteDown = false;
      expect(await handle.executeUpdate(resumeUpdate, { args: [{ rate: 20 }] })).toBe('running');
      const final = await handle.result();
      expect(final.counts.done).toBe(300);
      expect(final.urls).toMatchObject({ total: 300, finished: 300 });
      expect(new Set(records.map((r) => r.url)).size).toBe(300);
      expect(records.every((r) => r.outcome === 'done')).toBe(true);
    });
  });

  it('halts a source whose site began answering with pages instead of images, keeping the URLs not yet asked for', async () => {
    const { taskQueue, workflowId } = ids('waf.test');
    // A firewall that serves its "verify you are human" page with 200 from the 61st request on.
    let asked = 0;
    let blocking = true;
    const { grants, records, acts } = scriptedActivities(() => {
      asked += 1;
      return asked <= 60 || !blocking ? { cls: 'done', status: 200 } : { cls: 'content', status: 200, page: true };
    });
    const worker = await monitorWorker(env, taskQueue, acts);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId,
        args: [{ source: 'waf.test', config: { rate: 20 }, work: chunksOf('waf.test', 600, 100), patchLevel: PATCH_LEVEL }],
      });
      let stats = await handle.query(statsQuery);
      for (let i = 0; i < 30 && stats.state !== 'halted'; i++) {
        await env.sleep(5_000);
        stats = await handle.query(statsQuery);
      }
      expect(stats.state).toBe('halted');
      expect(stats.haltReason).toMatch(/^its last 50 answers were not images but web pages \(HTML, JSON or text\), empty bodies, endless redirects or 4xx refusals.*, after 60 images: likely a block, login or cookie wall/);
      expect((await handle.describe()).typedSearchAttributes.get(CRAWL_STATE)).toBe('halted');
      // Not the 540 pages a crawl to the end would ask for: 50, and what the grants already out
      // sent before they reported (each stops after PAGE_BURST pages in a row; how many were out
      // depends on the machine's speed: 232 pages on a loaded CI machine before the harness
      // stopped as the real activity does). Then nothing more.
      const grantsAtHalt = grants.length;
      await env.sleep(600_000);
      expect(grants.length).toBe(grantsAtHalt);
      stats = await handle.query(statsQuery);
      expect(stats.counts.content).toBeGreaterThanOrEqual(50);
      expect(stats.counts.content).toBeLessThan(300);
      expect(stats.urls.finished).toBeLessThan(600);
      expect(stats.urls.finished).toBe(records.length);

      // The operator had the site let us through: resume finishes with every URL once.
      blocking = false;
      expect(await handle.executeUpdate(resumeUpdate, { args: [{}] })).toBe('running');
      const final = await handle.result();
      expect(final.urls).toMatchObject({ total: 600, finished: 600 });
      expect(new Set(records.map((r) => r.url)).size).toBe(600);
      expect(final.counts.done).toBe(600 - stats.counts.content);
    });
  });

  it('resumes or stops, for `crawl run --resume-halted / --stop-halted`, a source an earlier run left halted', async () => {
    for (const action of ['stop', 'resume'] as const) {
      const { taskQueue, workflowId } = ids(`halted-${action}.test`);
      const source = workflowId.slice('crawl-monitor:'.length);
      let siteDown = true;
      const { records, acts } = scriptedActivities(() => (siteDown ? { cls: 'error', status: 502 } : { cls: 'done', status: 200 }));
      const worker = await monitorWorker(env, taskQueue, acts);
      await worker.runUntil(async () => {
        const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
          taskQueue, workflowId, args: [{ source, config: { rate: 10 }, work: chunksOf(source, 100, 100), options: { maxAttempts: 20 } }],
        });
        for (let i = 0; i < 30 && (await handle.query(statsQuery)).state !== 'halted'; i++) await env.sleep(30_000);
        expect((await handle.query(statsQuery)).state).toBe('halted');
        siteDown = false;
        const lines: string[] = [];
        const out = { write: (text: string) => { lines.push(text); return true; } } as unknown as NodeJS.WritableStream;
        await actOnHalted(env.client, [source], action, out);
        const final = await handle.result();
        if (action === 'stop') {
          expect(lines.join('')).toMatch(new RegExp(`${source}: halted by an earlier run \\(the last 50 requests all failed\\); stopped for good`));
          expect(final.state).toBe('stopped');
          expect(records).toEqual([]);
        } else {
          expect(lines.join('')).toMatch(new RegExp(`${source}: halted by an earlier run .*; resumed`));
          expect(final.counts.done).toBe(100);
          expect(new Set(records.map((r) => r.url)).size).toBe(100);
        }
      });
    }
  });

  it('holds every grant for a 429 Retry-After of 120 s, then ramps back gradually to the target', async () => {
    const { taskQueue, workflowId } = ids('throttle.test');
    let throttledOnce = false;
    const { grants, acts } = scriptedActivities((url) => {
      if (!throttledOnce && indexOf(url) === 100) { throttledOnce = true; return { cls: 'error', status: 429, retryAfterMs: 120_000 }; }
      return { cls: 'done', status: 200 };
    });
    const worker = await monitorWorker(env, taskQueue, acts);
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId,
      args: [{ source: 'throttle.test', config: { rate: 10 }, work: chunksOf('throttle.test', 4000, 4000) }],
    }));
    const ordered = [...grants].sort((a, b) => a.startMs - b.startMs);
    const hit = ordered.findIndex((g) => g.sent < g.slots);
    expect(hit).toBeGreaterThanOrEqual(0);
    const throttleAt = ordered[hit]!.startMs + (ordered[hit]!.sent - 1) * ordered[hit]!.intervalMs;
    const all = sendTimes(grants);
    // Nothing sent inside the Retry-After window, and no grant acted on inside it.
    expect(all.filter((t) => t > throttleAt && t < throttleAt + 120_000)).toEqual([]);
    expect(ordered[hit + 1]!.scheduledMs).toBeGreaterThanOrEqual(throttleAt + 120_000 - 2_500);
    // Ramp: right after the hold about half the target; minutes later the target again.
    const rateBetween = (from: number, to: number) => all.filter((t) => t >= from && t < to).length / ((to - from) / 1000);
    const holdEnd = throttleAt + 120_000;
    const early = rateBetween(holdEnd, holdEnd + 20_000);
    expect(early).toBeGreaterThan(4);
    expect(early).toBeLessThan(7);
    expect(rateBetween(holdEnd + 100_000, holdEnd + 120_000)).toBeGreaterThan(early);
    expect(rateBetween(holdEnd + 200_000, holdEnd + 230_000)).toBeGreaterThan(9);
    expect(stats.counts.done).toBe(4000);
    expect(stats.counts.retries).toBe(1);
  });

  it('waits for an unreadable robots.txt to be asked again (5 min) without halving the rate or spending attempts', async () => {
    const { taskQueue, workflowId } = ids('robots.test');
    const { grants, acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    let firstAt: number | undefined;
    const worker = await monitorWorker(env, taskQueue, {
      ...acts,
      // The first grant finds robots.txt unreadable: nothing sent, every URL handed back.
      async fetchBatch(input: FetchBatchInput): Promise<FetchBatchResult> {
        if (firstAt === undefined) {
          firstAt = input.schedule.startMs;
          return { outcomes: [], unused: input.items.map((_, i) => i), robotsRetryMs: 300_000 };
        }
        return acts.fetchBatch(input);
      },
    });
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId,
      args: [{ source: 'robots.test', config: { rate: 5 }, work: chunksOf('robots.test', 200, 200) }],
    }));
    const ordered = [...grants].sort((a, b) => a.startMs - b.startMs);
    expect(ordered[0]!.scheduledMs).toBeGreaterThanOrEqual(firstAt! + 300_000 - 2_500);
    expect(Math.min(...sendTimes(grants))).toBeGreaterThanOrEqual(firstAt! + 300_000 - 2_500);
    // Not a throttle: the grants after the wait run at the full rate at once.
    expect(ordered[0]!.intervalMs).toBeLessThanOrEqual(1_000 / 5 / 0.95);
    expect(stats.counts).toMatchObject({ done: 200, retries: 0, error: 0 });
    expect(stats.robotsRetryAt).toBeNull();
  });

  it('holds a source for a minute when the store fails, and its URLs keep their attempts', async () => {
    const { taskQueue, workflowId } = ids('store.test');
    const { grants, acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    let failedGrant: string | undefined;
    let failedAt = 0;
    let failures = 0;
    const worker = await monitorWorker(env, taskQueue, {
      ...acts,
      // Every attempt of the first grant finds the store down when it writes its records.
      async fetchBatch(input: FetchBatchInput): Promise<FetchBatchResult> {
        const grant = `${input.batchId}/${input.grantId}`;
        failedGrant ??= grant;
        if (grant === failedGrant) {
          failures += 1;
          failedAt = Date.now();
          throw ApplicationFailure.retryable('the store failed writing records: ENOSPC: no space left on device', 'StoreUnavailable');
        }
        return acts.fetchBatch(input);
      },
    });
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId,
      args: [{ source: 'store.test', config: { rate: 5 }, work: chunksOf('store.test', 100, 100) }],
    }));
    // The activity's own retries (3 attempts), then the batch hands the URLs back.
    expect(failures).toBe(3);
    const ordered = [...grants].sort((a, b) => a.startMs - b.startMs);
    expect(ordered[0]!.scheduledMs).toBeGreaterThanOrEqual(failedAt + 60_000 - 2_500);
    expect(Math.min(...sendTimes(grants))).toBeGreaterThanOrEqual(failedAt + 60_000 - 2_500);
    // Not the site's doing: the rate is not lowered, and no URL used an attempt or ended in error.
    expect(ordered[0]!.intervalMs).toBeLessThanOrEqual(1_000 / 5 / 0.95);
    expect(stats.counts).toMatchObject({ done: 100, retries: 0, error: 0 });
    expect(stats.storeRetryAt).toBeNull();
    expect(stats.alerts.join('\n')).toMatch(/store-unavailable.*ENOSPC: no space left on device.*keep their attempts/);
  });

  it('holds a source whose chunk file the workers\' store does not have, says why, and crawls it once the file is there', async () => {
    const { taskQueue, workflowId } = ids('chunk.test');
    const { grants, acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    let reads = 0;
    let firstReadAt = 0;
    const missing = 'chunk c0: chunks/chunk.test/c0.txt is missing from local directory /data/store: do `crawl start` and the workers use the same store?';
    const worker = await monitorWorker(env, taskQueue, {
      ...acts,
      // The first two reads find no file (`crawl start` wrote it elsewhere); then an operator has fixed the mount.
      async chunkWork(input: { chunk: WorkChunk }) {
        reads += 1;
        firstReadAt ||= Date.now();
        if (reads <= 2) throw ApplicationFailure.nonRetryable(missing, CHUNK_UNREADABLE);
        return acts.chunkWork(input);
      },
    });
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        // A child batch. Run by its monitor (a source this small, by default), this test's monitor
        // stopped getting its timers fired by the time-skipping server after the second read in
        // 3 of 4 runs of this whole file (never alone); on a real server (by hand: `crawl start`
        // into one store, a worker on another, the chunk files copied over) it read them again a
        // minute later and crawled.
        taskQueue, workflowId, args: [{ source: 'chunk.test', config: { rate: 5 }, options: { smallSourceUrls: 0 }, work: chunksOf('chunk.test', 20, 20, { spooled: true }), patchLevel: PATCH_LEVEL }],
      });
      // Before, the batch failed at once and the monitor waited for it for ever, saying nothing.
      let stats = await handle.query(statsQuery);
      for (let i = 0; i < 20 && !stats.storeError; i++) {
        await env.sleep(1_000);
        stats = await handle.query(statsQuery);
      }
      expect(stats).toMatchObject({ state: 'running', storeError: missing });
      const final = await handle.result();
      expect(reads).toBe(3);
      expect(final.counts).toMatchObject({ done: 20, error: 0, retries: 0 });
      expect(final.urls).toMatchObject({ total: 20, finished: 20 });
      // Read again a minute apart, as a failing store is tried again.
      expect(Math.min(...grants.map((g) => g.scheduledMs))).toBeGreaterThanOrEqual(firstReadAt + 2 * 60_000 - 2_500);
      await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, await env.client.workflow.getHandle(`${workflowId}/batch:c0`).fetchHistory(), `${workflowId}/batch:c0`);
    });
  });

  it('waits for a store that takes longer than ten tries to write the final records of failed URLs, and loses none', async () => {
    const { taskQueue, workflowId } = ids('records-late.test');
    const { acts, records } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    let recordTries = 0;
    const worker = await monitorWorker(env, taskQueue, {
      ...acts,
      // The activity fails for good every time: each URL uses up its attempts and needs a final record.
      async fetchBatch(): Promise<FetchBatchResult> {
        throw ApplicationFailure.nonRetryable('worker bug', 'Bug');
      },
      // The store is down for 12 tries (about 8 minutes of backoff), then back.
      async recordFinal(input: { outcomes: RequestOutcome[] }): Promise<void> {
        recordTries += 1;
        if (recordTries <= 12) throw new Error('503 SlowDown');
        return acts.recordFinal(input);
      },
    });
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId,
      args: [{ source: 'records-late.test', config: { rate: 5 }, work: chunksOf('records-late.test', 20, 20) }],
    }));
    expect(recordTries).toBe(13);
    expect(stats.counts).toMatchObject({ error: 20, done: 0 });
    expect(stats.urls).toMatchObject({ total: 20, finished: 20 });
    expect(records).toHaveLength(20);
  });

  it.each([1, 7.5, 40])('keeps grants under the 1 s and 10 s ceilings at rate %p over 10 simulated minutes', async (rate) => {
    const { taskQueue, workflowId } = ids(`ceiling-${rate}.test`);
    const { grants, acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    const total = Math.ceil(rate * 600);
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId,
      args: [{ source: `ceiling-${rate}.test`, config: { rate }, work: chunksOf(`ceiling-${rate}.test`, total, Math.ceil(total / 3)) }],
    }));
    const times = sendTimes(grants);
    const c = ceilings(rate, 0);
    expect(maxInAnyWindow(times, 1_000)).toBeLessThanOrEqual(c.perSecond);
    expect(maxInAnyWindow(times, 10_000)).toBeLessThanOrEqual(c.perTenSeconds);
    const span = (Math.max(...times) - Math.min(...times)) / 1000 + 1 / rate;
    expect(times.length / span).toBeGreaterThanOrEqual(rate * 0.95);
    expect(stats.counts.done).toBe(total);
  });

  it('keeps a batch alive and signalling while its monitor cannot be found', async () => {
    const { taskQueue, workflowId } = ids('gone.test');
    const { acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    const [chunk] = chunksOf('gone.test', 3, 3);
    await worker.runUntil(async () => {
      const batch = await env.client.workflow.start(crawlBatchWorkflow, {
        taskQueue, workflowId: `${workflowId}/batch:${chunk!.chunkId}`,
        args: [{ source: 'gone.test', monitorId: workflowId, chunk: chunk!, maxAttempts: 1 }],
      });
      const events = async () => (await batch.fetchHistory()).events ?? [];
      await env.sleep(5_000);
      // Its token request found no monitor (as between two runs of one): it waits and tries again.
      expect((await events()).some((e) => e.signalExternalWorkflowExecutionFailedEventAttributes)).toBe(true);
      expect((await batch.describe()).status.name).toBe('RUNNING');
      const monitor = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId, args: [{ source: 'gone.test', options: { finishWhenDrained: false } }],
      });
      await env.sleep(120_000);
      expect((await events()).some((e) => e.externalWorkflowExecutionSignaledEventAttributes)).toBe(true);
      expect((await batch.describe()).status.name).toBe('RUNNING');
      await batch.terminate('test over');
      await monitor.terminate('test over');
    });
  });

  it('continues-as-new in the middle of a crawl without losing state or a URL', async () => {
    const { taskQueue, workflowId } = ids('can.test');
    const { records, acts } = scriptedActivities((url, attempt) => (indexOf(url) % 20 === 3 && attempt === 1 ? { cls: 'error', status: 500 } : indexOf(url) % 11 === 5 ? { cls: 'linkrot', status: 404 } : { cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId,
        args: [{ source: 'can.test', config: { rate: 20 }, work: chunksOf('can.test', 1200, 200), options: { maxHistoryEvents: 150, maxBatches: 2 } }],
      });
      const firstRunId = handle.firstExecutionRunId;
      await env.sleep(20_000);
      // By id, not by run: the run that started may have continued-as-new already.
      const current = env.client.workflow.getHandle(workflowId);
      // An update that lands while a run is continuing-as-new is refused; a client tries again.
      // One attempt in a fresh-clone CI run never answered at all (the test timed out after
      // 120 s, nothing logged): each attempt gets 15 s of real time, then the next one goes.
      let answer: string | undefined;
      const within = <T>(p: Promise<T>, ms: number) => {
        let timer: NodeJS.Timeout | undefined;
        return Promise.race([p, new Promise<undefined>((r) => { timer = setTimeout(() => r(undefined), ms); })]).finally(() => clearTimeout(timer));
      };
      for (let attempt = 0; attempt < 4 && answer === undefined; attempt++) {
        answer = await within(current.executeUpdate(setRateUpdate, { args: [{ rate: 25, burst: 2 }] }).catch(() => undefined), 15_000);
      }
      expect(answer).toMatch(/target 25/);
      // A global ceiling set on the running crawl (`crawl set-max-rate`) caps it and survives too.
      let capped: string | undefined;
      for (let attempt = 0; attempt < 4 && capped === undefined; attempt++) {
        capped = await within(current.executeUpdate(setMaxRateUpdate, { args: [{ maxRate: 22 }] }).catch(() => undefined), 15_000);
      }
      expect(capped).toBe('global ceiling 22/s, target 22/s');
      // So does a cap on the Retry-After honoured that came with more work (`crawl start --max-retry-after 120`).
      await current.signal(addWorkSignal, [], { maxRetryAfterMs: 120_000 });
      const final = await handle.result();
      const latest = await env.client.workflow.getHandle(workflowId).describe();
      expect(latest.runId).not.toBe(firstRunId); // it did continue-as-new
      expect(final.target).toBe(22); // operator settings survived
      expect(final.maxRate).toBe(22);
      expect(final.burst).toBe(2);
      const linkrot = Array.from({ length: 1200 }, (_, i) => i).filter((i) => i % 11 === 5).length;
      expect(final.counts.linkrot).toBe(linkrot);
      expect(final.counts.done).toBe(1200 - linkrot);
      expect(final.urls).toMatchObject({ total: 1200, finished: 1200 });
      expect(records).toHaveLength(1200);
      expect(new Set(records.map((r) => r.url)).size).toBe(1200);
      // Started without a patch level, the first run asked patched(); the runs after it were
      // started by this code and take its level instead (no patch markers).
      const markers = async (runId: string) => ((await env.client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [])
        .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch').length;
      expect(await markers(firstRunId)).toBeGreaterThan(0);
      const lastRun = await env.client.workflow.getHandle(workflowId, latest.runId).fetchHistory();
      const input = startInput(lastRun);
      expect(input.patchLevel).toBe(PATCH_LEVEL);
      expect(input.governorConfig).toMatchObject({ globalCeiling: 22, adaptive: { maxRetryAfterMs: 120_000, rampSeconds: 180 } });
      expect(await markers(latest.runId)).toBe(0);
    });
  }, 240_000); // 36 s alone on 2 cores; a loaded CI run took longer than the default 120 s

  it('hands a URL part-way through its redirects to its next grant with where it had got to', async () => {
    const { taskQueue, workflowId } = ids('hops.test');
    const base = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const tried: BatchItem[] = [];
    const midway: RedirectHop = { url: 'https://hops.test/next/7.jpg', redirects: 2 };
    // URL 7 runs out of slots after two hops the first time it is granted; the rest are done.
    let cut = false;
    async function fetchBatch(input: FetchBatchInput): Promise<FetchBatchResult> {
      const outcomes: RequestOutcome[] = [];
      const unused: number[] = [];
      const hops: [number, RedirectHop][] = [];
      input.items.forEach((item, i) => {
        tried.push(item);
        if (indexOf(item.url) === 7 && !cut) { cut = true; unused.push(i); hops.push([i, midway]); return; }
        outcomes.push({ url: item.url, cls: 'done', status: 200, ttfbMs: 20, sent: true, final: true, attempt: item.attempt, atMs: input.schedule.startMs });
      });
      return { outcomes, unused, hops };
    }
    const worker = await monitorWorker(env, taskQueue, { ...base.acts, fetchBatch });
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId,
      args: [{ source: 'hops.test', config: { rate: 5 }, work: chunksOf('hops.test', 20, 20) }],
    }));
    const seven = tried.filter((item) => indexOf(item.url) === 7);
    expect(seven).toEqual([
      { url: 'https://hops.test/img/7.jpg', attempt: 1 },
      { url: 'https://hops.test/img/7.jpg', attempt: 1, hop: midway },
    ]);
    expect(tried.filter((item) => item.hop && indexOf(item.url) !== 7)).toEqual([]);
    expect(stats.counts.done).toBe(20);
  });

  it('stop ends the source\'s batches too: none is left waiting for a monitor that has gone', async () => {
    const { taskQueue, workflowId } = ids('stopped.test');
    const { grants, acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId,
        args: [{ source: 'stopped.test', config: { rate: 1 }, work: chunksOf('stopped.test', 300, 100) }],
      });
      await env.sleep(30_000);
      expect(grants.length).toBeGreaterThan(0);
      expect(await handle.executeUpdate(stopUpdate)).toBe('stopped');
      // Awaited with time locked (a plain client): once stopped, the monitor needs no timer to
      // finish, and the time-skipping client's result() lets the test server skip ahead while
      // the monitor's last workflow tasks are still queued, which on a loaded machine jumped
      // to the ten-year default run timeout ("Workflow execution timed out", 1 full CI run in
      // 4; sdk-java #1291).
      const final = await new Client({ connection: env.connection, namespace: env.namespace }).workflow.getHandle(workflowId).result();
      expect(final.state).toBe('stopped');
      expect(final.urls.finished).toBeLessThan(300);
      // Stopped with URLs left: not shown as finished.
      expect((await handle.describe()).typedSearchAttributes.get(CRAWL_STATE)).toBe('stopped');
      const grantsAtStop = grants.length;
      // Polled in real time, not with env.sleep(): the time-skipping server can keep a time lock
      // for work in flight in a workflow cancelled from outside (sdk-java #1138), and its sleep
      // then ran in real time (a 10-minute sleep, one run in three).
      const statuses = async () => Promise.all(['c0', 'c100', 'c200'].map(async (chunkId) => {
        try {
          return (await env.client.workflow.getHandle(`${workflowId}/batch:${chunkId}`).describe()).status.name;
        } catch {
          return 'never started';
        }
      }));
      let seen = await statuses();
      for (const until = Date.now() + 20_000; seen.includes('RUNNING') && Date.now() < until;) {
        await new Promise((r) => setTimeout(r, 200));
        seen = await statuses();
      }
      expect(seen.filter((st) => st === 'RUNNING')).toEqual([]);
      expect(seen).toContain('CANCELLED');
      // Nothing was granted or sent after the stop.
      expect(grants.length).toBe(grantsAtStop);
    });
  });

  it('rejects bad operator input with a clear message', async () => {
    const { taskQueue, workflowId } = ids('validate.test');
    const { acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId,
        // Enough work to be still running after five updates: a 5-URL source whose batch starts
        // with its first grant could finish between them.
        args: [{ source: 'validate.test', config: { rate: 1 }, work: chunksOf('validate.test', 200, 200) }],
      });
      await expect(handle.executeUpdate(setRateUpdate, { args: [{ rate: -3 }] })).rejects.toMatchObject(rejection(/greater than 0/));
      await expect(handle.executeUpdate(setRateUpdate, { args: [{ rate: 2, burst: 1.5 }] })).rejects.toMatchObject(rejection(/burst must be a whole number/));
      await expect(handle.executeUpdate(resumeUpdate, { args: [{ rate: -1 }] })).rejects.toMatchObject(rejection(/greater than 0/));
      await expect(handle.executeUpdate(setMaxRateUpdate, { args: [{ maxRate: 0 }] })).rejects.toMatchObject(rejection(/greater than 0/));
      await expect(handle.executeUpdate(setMaxRateUpdate, { args: [{} as never] })).rejects.toMatchObject(rejection(/setMaxRate needs \{"maxRate"/));
      expect((await handle.query(statsQuery)).target).toBe(1);
      await handle.result();
    });
  });

  it('keeps a batch\'s chunk reading, record listing and done-marker out of the task queue (local activities)', async () => {
    const { taskQueue, workflowId } = ids('small.test');
    // A fetch activity that does not leave the done-marker (an older worker's): the batch does.
    const { grants, doneMarkers, acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }), { ignoreMarkDone: true });
    const worker = await monitorWorker(env, taskQueue, acts);
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source: 'small.test', config: { rate: 1 }, options: { smallSourceUrls: 0 }, work: chunksOf('small.test', 3, 3, { spooled: true }) }],
    }));
    expect(stats.counts.done).toBe(3);
    const batch = env.client.workflow.getHandle(grants[0]!.batchId);
    const history = await batch.fetchHistory();
    const events = history.events ?? [];
    const activities = events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : []));
    expect(activities).toEqual(['fetchBatch']);
    // The chunk with what earlier runs recorded of it (one local activity), and the done-marker.
    expect(events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')).toHaveLength(2);
    expect(doneMarkers).toEqual([{ chunkId: 'c0', by: 'batch' }]);
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, history, grants[0]!.batchId);
  });

  it('spreads the URLs of a host that asks for a Crawl-delay over the grants of a chunk that lists that host first, instead of leaving them all to the end', async () => {
    const { taskQueue, workflowId } = ids('museum.test');
    const { acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const delayMs = 1_000;
    const onDelayedHost = (url: string) => indexOf(url) < 40;
    const calls: { delayed: number; others: number; capped: boolean }[] = [];
    // Like the real activity: the delayed host's URLs go one per delay (the first a delay after
    // the window before), the others take the slots between; a grant of nothing but the delayed
    // host's URLs at a pace faster than its delay asks for the source to be capped.
    const fetchBatch = async (input: FetchBatchInput): Promise<FetchBatchResult> => {
      const { startMs, endMs, intervalMs } = input.schedule;
      const onlyDelayed = intervalMs < delayMs && input.items.every((item) => onDelayedHost(item.url));
      const slots = slotCount(input.schedule);
      const delayedMay = Math.max(0, Math.floor((endMs - startMs - (delayMs - intervalMs)) / delayMs) + 1);
      const outcomes: RequestOutcome[] = [];
      const unused: number[] = [];
      const hostWaited: number[] = [];
      let delayed = 0;
      input.items.forEach((item, i) => {
        const slow = onDelayedHost(item.url);
        if (outcomes.length >= slots || (slow && delayed >= delayedMay)) {
          unused.push(i);
          if (slow) hostWaited.push(i);
          return;
        }
        if (slow) delayed += 1;
        outcomes.push({ url: item.url, cls: 'done', status: 200, sent: true, final: true, attempt: item.attempt, atMs: startMs + outcomes.length * intervalMs });
      });
      calls.push({ delayed, others: outcomes.length - delayed, capped: onlyDelayed });
      if (onlyDelayed) return { outcomes, unused, crawlDelayMs: delayMs };
      const spanning = input.items.some((item) => onDelayedHost(item.url));
      return { outcomes, unused, ...(spanning ? { hostCrawlDelay: { origin: 'https://www.museum.test', delayMs }, hostWaited } : {}) };
    };
    const worker = await monitorWorker(env, taskQueue, { ...acts, fetchBatch });
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source: 'museum.test', config: { rate: 10 }, work: chunksOf('museum.test', 400, 500) }],
    }));
    expect(stats.urls).toMatchObject({ total: 400, finished: 400 });
    // At 10/s a window holds 100 slots and ~10 of the delayed host's requests. Left at the back of
    // the queue, its URLs waited for the other host's 360 (10 went in the first grant) and then
    // went at one a second with the source capped (19 of 40 alongside); now they go alongside.
    const lastWithOthers = calls.map((c) => c.others > 0).lastIndexOf(true);
    const delayedAlongside = calls.slice(0, lastWithOthers + 1).reduce((n, c) => n + c.delayed, 0);
    expect(delayedAlongside).toBeGreaterThanOrEqual(35);
    // So no grant was left with nothing but them, and the source was never capped to their pace.
    expect(calls.filter((c) => c.capped)).toEqual([]);
    const batchId = `${workflowId}/batch:c0`;
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, await env.client.workflow.getHandle(batchId).fetchHistory(), batchId);
  });

  it('crawls a one-host source at its Crawl-delay from its first window on, its first capped window a delay after the last request of those booked before', async () => {
    const { taskQueue, workflowId } = ids('archive.test');
    const { acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const delayMs = 1_000;
    const sends: number[] = [];
    // As the real activity: in a grant whose slots are closer than the delay, the host's first
    // request goes a delay after the window before, each next a delay after the one before has
    // ended (10 ms here), and the delay is reported; at or beyond it, every slot sends.
    const fetchBatch = async (input: FetchBatchInput): Promise<FetchBatchResult> => {
      const { startMs, intervalMs } = input.schedule;
      const slots = slotCount(input.schedule);
      const paced = intervalMs < delayMs;
      const outcomes: RequestOutcome[] = [];
      const unused: number[] = [];
      let freeAtMs = paced ? startMs - intervalMs + delayMs : startMs;
      let slot = 0;
      input.items.forEach((item, i) => {
        if (paced) slot = Math.max(slot, Math.ceil((freeAtMs - startMs) / intervalMs - 1e-9));
        if (slot >= slots) { unused.push(i); return; }
        const atMs = startMs + slot * intervalMs;
        slot += 1;
        freeAtMs = atMs + 10 + delayMs;
        sends.push(atMs);
        outcomes.push({ url: item.url, cls: 'done', status: 200, sent: true, final: true, attempt: item.attempt, atMs });
      });
      const lastSendMs = outcomes.at(-1)?.atMs;
      return { outcomes, unused, ...(paced ? { crawlDelayMs: delayMs } : {}), ...(lastSendMs !== undefined ? { lastSendMs, leastHostDelayMs: delayMs } : {}) };
    };
    const worker = await monitorWorker(env, taskQueue, { ...acts, fetchBatch });
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source: 'archive.test', config: { rate: 10 }, work: chunksOf('archive.test', 150, 50) }],
    }));
    expect(stats.urls).toMatchObject({ total: 150, finished: 150 });
    expect(stats.siteMaxRate).toBe(1);
    const sorted = [...sends].sort((a, b) => a - b);
    // Every request a delay after the one before, across batches and across the cap: the first
    // capped window came right after the first window's last stretch, where another batch was
    // still sending at the host's pace (103 ms after one of its requests).
    const closest = Math.min(...sorted.slice(1).map((t, k) => t - sorted[k]!));
    expect(closest).toBeGreaterThanOrEqual(delayMs);
    // About one request a second from the first window on (~155 s; the 3% pacing margin).
    expect(sorted.at(-1)! - sorted[0]!).toBeLessThan(165_000);
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, await env.client.workflow.getHandle(workflowId).fetchHistory(), workflowId);
  });

  it('lifts a Crawl-delay cap once the batches holding only the delayed host\'s URLs are done, and gives them the windows until then', async () => {
    const { taskQueue, workflowId } = ids('gallery.test');
    const { acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const delayMs = 1_000;
    // The first chunk is all on a host that asks for 1 s between requests; the other five on hosts that ask for nothing.
    const onDelayedHost = (url: string) => indexOf(url) < 100;
    const sends: { atMs: number; delayed: boolean }[] = [];
    const fetchBatch = async (input: FetchBatchInput): Promise<FetchBatchResult> => {
      const { startMs, endMs, intervalMs } = input.schedule;
      // As the real activity: a grant of nothing but the delayed host's URLs, faster than its
      // delay, goes at the host's pace and asks for the source to be capped.
      const onlyDelayed = intervalMs < delayMs && input.items.every((item) => onDelayedHost(item.url));
      const slots = slotCount(input.schedule);
      const delayedMay = Math.max(0, Math.floor((endMs - startMs - Math.max(0, delayMs - intervalMs)) / delayMs) + 1);
      const outcomes: RequestOutcome[] = [];
      const unused: number[] = [];
      let delayed = 0;
      input.items.forEach((item, i) => {
        const slow = onDelayedHost(item.url);
        if (outcomes.length >= slots || (slow && delayed >= delayedMay)) { unused.push(i); return; }
        if (slow) delayed += 1;
        const atMs = startMs + outcomes.length * intervalMs;
        sends.push({ atMs, delayed: slow });
        outcomes.push({ url: item.url, cls: 'done', status: 200, sent: true, final: true, attempt: item.attempt, atMs });
      });
      const leastHostDelayMs = outcomes.length === 0 ? undefined : outcomes.length > delayed ? 0 : delayMs;
      return { outcomes, unused, ...(leastHostDelayMs !== undefined ? { leastHostDelayMs } : {}), ...(onlyDelayed ? { crawlDelayMs: delayMs } : {}) };
    };
    const worker = await monitorWorker(env, taskQueue, { ...acts, fetchBatch });
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source: 'gallery.test', config: { rate: 10 }, work: chunksOf('gallery.test', 600, 100) }],
    }));
    expect(stats.urls).toMatchObject({ total: 600, finished: 600 });
    // Capped for good, all 600 went at 1/s (628 s; the delayed host's done at 473 s, with a
    // quarter of the windows). Now the delayed host's 100 go first at its pace (102 s), then the
    // cap goes and the rest go at 10/s (160 s in all; 195 s when the others' window after the
    // delayed host's was a full one at the capped rate, 232 s with a ramp up from the cap).
    const first = Math.min(...sends.map((x) => x.atMs));
    const lastDelayed = Math.max(...sends.filter((x) => x.delayed).map((x) => x.atMs));
    const last = Math.max(...sends.map((x) => x.atMs));
    expect(lastDelayed - first).toBeLessThan(150_000);
    expect(last - first).toBeLessThan(180_000);
    expect(stats.siteMaxRate).toBeNull();
    for (const batchId of [`${workflowId}/batch:c0`, `${workflowId}/batch:c100`]) {
      await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, await env.client.workflow.getHandle(batchId).fetchHistory(), batchId);
    }
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, await env.client.workflow.getHandle(workflowId).fetchHistory(), workflowId);
  });

  it('gives batches more URLs than slots once robots.txt rules most of them out, so a disallowing site ends in a few windows', async () => {
    const { taskQueue, workflowId } = ids('disallowing.test');
    const { acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const calls: { batchId: string; items: number; slots: number; sent: number; startMs: number }[] = [];
    // Like the real activity: a URL robots.txt rules out (all but every 50th) is settled without
    // a slot; the others take one each, and those left without one go back unused.
    const fetchBatch = async (input: FetchBatchInput): Promise<FetchBatchResult> => {
      const slots = slotCount(input.schedule);
      const outcomes: RequestOutcome[] = [];
      const unused: number[] = [];
      let sent = 0;
      let decided = 0;
      input.items.forEach((item, i) => {
        const ruledOut = indexOf(item.url) % 50 !== 0;
        if (!ruledOut && sent >= slots) { unused.push(i); return; }
        if (ruledOut) decided += 1;
        else sent += 1;
        outcomes.push({ url: item.url, cls: ruledOut ? 'robots' : 'done', sent: !ruledOut, final: true, attempt: item.attempt, atMs: input.schedule.startMs });
      });
      calls.push({ batchId: input.batchId, items: input.items.length, slots, sent, startMs: input.schedule.startMs });
      return { outcomes, unused, decidedWithoutRequest: decided };
    };
    const worker = await monitorWorker(env, taskQueue, { ...acts, fetchBatch });
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source: 'disallowing.test', config: { rate: 1 }, work: chunksOf('disallowing.test', 2_000, 500) }],
    }));
    expect(stats.counts).toMatchObject({ robots: 1_960, done: 40 });
    expect(stats.urls).toMatchObject({ total: 2_000, finished: 2_000 });
    // One URL per slot would take 2,000 slots (33 minutes at 1/s) in ~50 grants. The first grant
    // shows the share ruled out; from then on a batch's grant takes the rest of its chunk, the
    // first grant of a later batch too (the monitor passes the share on), and the next window's
    // slots are shared by all four batches, since each needs only a few. The first window is
    // 10 s (~9 slots), so the first share is learnt from 9 URLs (8/9 ruled out, against 39/40 from
    // a 40 s window): later grants carry a little fewer URLs, 7 grants in ~100 s instead of 5 in ~90.
    expect(calls[0]!.items).toBe(calls[0]!.slots);
    expect(calls[0]!.slots).toBeLessThanOrEqual(10);
    expect(calls.length).toBeLessThanOrEqual(7);
    // The first window goes to the first batch (no share known yet); the rest fit in the next three.
    const windowMs = 40_000;
    expect(Math.max(...calls.map((c) => c.startMs)) - calls[0]!.startMs).toBeLessThanOrEqual(10_000 + 2 * windowMs + 20_000);
    for (const c of calls) expect(c.sent).toBeLessThanOrEqual(c.slots);
    const batchId = calls[0]!.batchId;
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, await env.client.workflow.getHandle(batchId).fetchHistory(), batchId);
  });

  it('makes a slow source\'s first window 10 s, so its first report (and progress) comes after ~10 s, not ~40 s', async () => {
    const { taskQueue, workflowId } = ids('first-window.test');
    const { grants, acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    const stats = await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source: 'first-window.test', config: { rate: 1 }, work: chunksOf('first-window.test', 60, 60) }],
    }));
    expect(stats.counts.done).toBe(60);
    const [first, second] = grants;
    // 1 req/s: ~10 slots in the first window, then the usual ~40.
    expect(first!.slots).toBeLessThanOrEqual(10);
    expect(first!.endMs - first!.startMs).toBeLessThanOrEqual(10_000);
    expect(second!.slots).toBeGreaterThanOrEqual(38);
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const patches = history.events!.flatMap((e) => Object.values(e.markerRecordedEventAttributes?.details ?? {}).flatMap((d) => (d.payloads ?? []).map((p) => Buffer.from(p.data ?? []).toString())));
    expect(patches.some((p) => p.includes('short-first-window'))).toBe(true);
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, history, workflowId);
  });

  it('replays its own recorded history deterministically', async () => {
    const { taskQueue, workflowId } = ids('replay.test');
    const { acts } = scriptedActivities((url) => (indexOf(url) % 5 === 0 ? { cls: 'error', status: 503, retryAfterMs: 3_000 } : { cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    await worker.runUntil(env.client.workflow.execute(crawlMonitorWorkflow, {
      taskQueue, workflowId, args: [{ source: 'replay.test', config: { rate: 4 }, work: chunksOf('replay.test', 60, 30) }],
    }));
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, history, workflowId);
  });

  it('hands the fetch activity the source\'s maxConnections from the grant after a catalogue entry or an operator brings it, and none after one that drops it', async () => {
    const { taskQueue, workflowId } = ids('connections.test');
    const scripted = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const given: { atMs: number; maxConnections: number | undefined }[] = [];
    // On the test server's clock (skipped time), as the signals below are.
    const acts = { ...scripted.acts, async fetchBatch(input: FetchBatchInput) { given.push({ atMs: Context.current().info.scheduledTimestampMs, maxConnections: input.maxConnections }); return scripted.acts.fetchBatch(input); } };
    const worker = await monitorWorker(env, taskQueue, acts);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId, args: [{ source: 'connections.test', config: { rate: 2 }, work: chunksOf('connections.test', 1_000, 100) }],
      });
      await env.sleep(20_000);
      await handle.signal(addWorkSignal, [], { catalog: { rate: 2, maxConnections: 3 } });
      const setAt = await env.currentTimeMs();
      await env.sleep(1_000);
      expect((await handle.query(statsQuery)).maxConnections).toBe(3);
      await env.sleep(60_000);
      await handle.signal(addWorkSignal, [], { catalog: { rate: 2 } });
      const droppedAt = await env.currentTimeMs();
      await env.sleep(60_000);
      expect((await handle.query(statsQuery)).maxConnections).toBeUndefined();
      expect(given.filter((g) => g.atMs < setAt).map((g) => g.maxConnections)).toEqual(given.filter((g) => g.atMs < setAt).map(() => undefined));
      const between = given.filter((g) => g.atMs > setAt + 1_000 && g.atMs < droppedAt);
      expect(between.length).toBeGreaterThan(0);
      for (const g of between) expect(g.maxConnections).toBe(3);
      const after = given.filter((g) => g.atMs > droppedAt + 1_000);
      expect(after.length).toBeGreaterThan(0);
      for (const g of after) expect(g.maxConnections).toBeUndefined();
      // An operator's word (crawl set-max-connections): checked, answered, and in the next grants.
      await expect(handle.executeUpdate(setMaxConnectionsUpdate, { args: [{ maxConnections: 0 }] })).rejects.toMatchObject(rejection(/maxConnections must be a whole number of requests open at once from 1 to 4096/));
      await expect(handle.executeUpdate(setMaxConnectionsUpdate, { args: [{} as never] })).rejects.toMatchObject(rejection(/setMaxConnections needs \{"maxConnections"/));
      expect(await handle.executeUpdate(setMaxConnectionsUpdate, { args: [{ maxConnections: 5 }] })).toBe('at most 5 requests open at once (was none)');
      const operatorAt = await env.currentTimeMs();
      await env.sleep(60_000);
      expect((await handle.query(statsQuery)).maxConnections).toBe(5);
      const operators = given.filter((g) => g.atMs > operatorAt + 1_000);
      expect(operators.length).toBeGreaterThan(0);
      for (const g of operators) expect(g.maxConnections).toBe(5);
      await handle.executeUpdate(stopUpdate);
      await handle.result();
    });
  });

  it('hands the open-download limit one fetch activity learnt for a site to the activities of the next grants, and none once one lifts it', async () => {
    const { taskQueue, workflowId } = ids('openlimits.test');
    const scripted = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const site = 'http://openlimits.test';
    const given: (Record<string, OpenLimitHint> | undefined)[] = [];
    let judged: OpenLimitHint | undefined = { limit: 3, fastestMsPerMib: 500 };
    const acts = {
      ...scripted.acts,
      async fetchBatch(input: FetchBatchInput): Promise<FetchBatchResult> {
        given.push(input.openLimits);
        const result = await scripted.acts.fetchBatch(input);
        return judged ? { ...result, openLimits: { [site]: judged } } : result;
      },
    };
    const worker = await monitorWorker(env, taskQueue, acts);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId, args: [{ source: 'openlimits.test', config: { rate: 2 }, work: chunksOf('openlimits.test', 1_000, 100) }],
      });
      await env.sleep(120_000);
      expect(given[0]).toBeUndefined();
      // Every grant planned after the first report carries it (a grant or two were planned before).
      expect(given.length).toBeGreaterThan(4);
      for (const g of given.slice(2)) expect(g).toEqual({ [site]: { limit: 3, fastestMsPerMib: 500 } });
      expect((await handle.query(statsQuery)).openLimits).toEqual({ [site]: 3 });
      // A worker found the site bears any number: the next grants carry nothing.
      judged = { limit: null, fastestMsPerMib: 500 };
      const lifted = given.length;
      await env.sleep(120_000);
      expect(given.length).toBeGreaterThan(lifted + 2);
      for (const g of given.slice(lifted + 2)) expect(g).toBeUndefined();
      expect((await handle.query(statsQuery)).openLimits).toBeUndefined();
      await handle.executeUpdate(stopUpdate);
      await handle.result();
    });
  });

  it('takes a changed catalogue entry and --max-rate that come with more work (crawl start of another manifest), and says what it ignored', async () => {
    const { taskQueue, workflowId } = ids('entry.test');
    const { grants, acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId, args: [{ source: 'entry.test', config: { rate: 5 }, work: chunksOf('entry.test', 400, 100) }],
      });
      await env.sleep(20_000);
      // The same entry again: nothing changes, nothing is said.
      await handle.signal(addWorkSignal, [{ chunkId: 'more1', urls: ['https://entry.test/more/1.jpg'] } as WorkChunk], { catalog: { rate: 5 } });
      // A misspelt field, as a hand-made signal could carry: said, not applied.
      await handle.signal(addWorkSignal, [], { catalog: { Rate: 1 } as unknown as SourceConfig });
      await env.sleep(1_000);
      let stats = await handle.query(statsQuery);
      expect(stats.target).toBe(5);
      expect(stats.alerts.filter((a) => /catalogue/.test(a))).toEqual([expect.stringMatching(/ addWork: catalogue entry ignored: "config" has unknown field "Rate"/)]);
      // Lowered: the grants after it are spaced for 1/s.
      await handle.signal(addWorkSignal, [{ chunkId: 'more2', urls: ['https://entry.test/more/2.jpg'] } as WorkChunk], { catalog: { rate: 1 } });
      const changedAt = await env.currentTimeMs();
      await env.sleep(1_000);
      stats = await handle.query(statsQuery);
      expect(stats).toMatchObject({ target: 1, rate: 1, urls: { total: 402 } });
      expect(stats.alerts.at(-1)).toMatch(/catalogue-entry: changed to rate 1: target 1\.00\/s, burst 0 \(was 5\.00\/s\)$/);
      await env.sleep(60_000);
      const later = grants.filter((g) => g.scheduledMs > changedAt + 1_000);
      expect(later.length).toBeGreaterThan(0);
      for (const g of later) expect(g.intervalMs).toBeGreaterThanOrEqual(1_000);
      expect(grants.some((g) => g.scheduledMs < changedAt && g.intervalMs < 1_000)).toBe(true);
      // A --max-rate given with more work: taken the same way; one that makes no sense is said.
      await handle.signal(addWorkSignal, [], { maxRate: -1 });
      await handle.signal(addWorkSignal, [], { catalog: { rate: 1 }, maxRate: 0.5 });
      await env.sleep(1_000);
      stats = await handle.query(statsQuery);
      expect(stats).toMatchObject({ target: 0.5, maxRate: 0.5 });
      expect(stats.alerts.slice(-2)).toEqual([
        expect.stringMatching(/ addWork: maxRate ignored: rate must be greater than 0/),
        expect.stringMatching(/ max-rate: --max-rate changed to 0\.50\/s \(was none\): global ceiling 0\.50\/s; target 0\.50\/s$/),
      ]);
      await handle.executeUpdate(stopUpdate);
      await handle.result();
    });
  });

  /**
   * A 100-URL source at 2/s whose 31st URL answers `429 Retry-After: 3600`, held for the default
   * 15 min when `held` runs; `retryAfterCaps` are the caps its grants carried to the activity.
   */
  const heldForAnHour = async (source: string, held: (handle: WorkflowHandle<typeof crawlMonitorWorkflow>, grants: () => number, retryAfterCaps: (number | undefined)[]) => Promise<void>) => {
    const { taskQueue, workflowId } = ids(source);
    let asked = false;
    const retryAfterCaps: (number | undefined)[] = [];
    const scripted = scriptedActivities((url) => {
      if (indexOf(url) === 30 && !asked) { asked = true; return { cls: 'error', status: 429, retryAfterMs: 3_600_000 }; }
      return { cls: 'done', status: 200 };
    });
    const acts = { ...scripted.acts, async fetchBatch(input: FetchBatchInput) { retryAfterCaps.push(input.maxRetryAfterMs); return scripted.acts.fetchBatch(input); } };
    const worker = await monitorWorker(env, taskQueue, acts);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId, args: [{ source, config: { rate: 2 }, work: chunksOf(source, 100, 100) }],
      });
      for (let i = 0; i < 60 && !asked; i++) await env.sleep(1_000);
      await env.sleep(5_000);
      expect(Date.parse((await handle.query(statsQuery)).retryAfterUntil!) - (await env.currentTimeMs())).toBeGreaterThan(800_000);
      await held(handle, () => scripted.grants.length, retryAfterCaps);
      expect((await handle.result()).urls).toMatchObject({ total: 100, finished: 100 });
    });
  };

  it('holds a source whose site said its quota is spent until the quota resets, at its rate, and grants nothing meanwhile', async () => {
    const source = 'quota.test';
    const { taskQueue, workflowId } = ids(source);
    const scripted = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    let spentAtMs: number | undefined;
    const acts = {
      ...scripted.acts,
      // The 11th URL's answer says none of the site's 10 requests is left for 2 minutes: the activity stops there.
      async fetchBatch(input: FetchBatchInput): Promise<FetchBatchResult> {
        const at = spentAtMs === undefined ? input.items.findIndex((item) => indexOf(item.url) === 10) : -1;
        if (at < 0) return scripted.acts.fetchBatch(input);
        // Workflow time (skipped), as the grant's; the activity's own clock is not.
        spentAtMs = input.schedule.startMs;
        const result = await scripted.acts.fetchBatch({ ...input, items: input.items.slice(0, at + 1) });
        return { ...result, unused: [...result.unused, ...input.items.slice(at + 1).map((_, k) => at + 1 + k)], quotaHoldMs: 120_000, quotaLimit: 10 };
      },
    };
    const worker = await monitorWorker(env, taskQueue, acts);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId, args: [{ source, config: { rate: 2 }, work: chunksOf(source, 40, 40) }],
      });
      for (let i = 0; i < 60 && spentAtMs === undefined; i++) await env.sleep(1_000);
      await env.sleep(2_000);
      const stats = await handle.query(statsQuery);
      // Counted from the report, which the scripted activity sends before its window's start.
      const untilMs = Date.parse(stats.quotaUntil!);
      expect(untilMs - spentAtMs!).toBeGreaterThan(115_000);
      expect(stats).toMatchObject({ quotaLimit: 10, retryAfterUntil: null, rate: 2, slowed: null });
      expect(stats.alerts.at(-1)).toMatch(/quota-spent: the site's rate-limit headers say none of its 10 requests left; nothing sent for 1[12]\d s, until its quota resets$/);
      const grantsBefore = scripted.grants.length;
      await env.sleep(100_000);
      expect(scripted.grants.length).toBe(grantsBefore);
      expect((await handle.result()).urls).toMatchObject({ total: 40, finished: 40 });
      // Nothing went before the reset, and the rest went at the source's rate.
      expect(Math.min(...scripted.grants.slice(grantsBefore).map((g) => g.startMs))).toBeGreaterThanOrEqual(untilMs);
    });
  });

  it('takes a --max-retry-after that comes with more work: a source held for an hour-long Retry-After is asked again at the new cap', async () => {
    await heldForAnHour('retry-after.test', async (handle, grants, retryAfterCaps) => {
      const grantsBefore = grants();
      // Nonsense is said and ignored; a cap of 60 s ends the hold 60 s from now.
      await handle.signal(addWorkSignal, [], { maxRetryAfterMs: 0 });
      await handle.signal(addWorkSignal, [], { maxRetryAfterMs: 60_000 });
      const cappedAt = await env.currentTimeMs();
      await env.sleep(1_000);
      const stats = await handle.query(statsQuery);
      expect(stats.alerts.slice(-2)).toEqual([
        expect.stringMatching(/ addWork: maxRetryAfterMs ignored: maxRetryAfterMs must be a number of ms from 1000 to 86400000, not 0$/),
        expect.stringMatching(/ max-retry-after: --max-retry-after changed to 60 s \(was 900 s\); the Retry-After hold now ends at /),
      ]);
      expect(Date.parse(stats.retryAfterUntil!) - cappedAt).toBeGreaterThanOrEqual(59_000);
      expect(Date.parse(stats.retryAfterUntil!) - cappedAt).toBeLessThanOrEqual(61_000);
      await env.sleep(120_000);
      // Granted again after the new cap, its grants carrying it to the activities.
      expect(grants()).toBeGreaterThan(grantsBefore);
      expect(retryAfterCaps.at(-1)).toBe(60_000);
    });
  });

  it('takes crawl set-max-retry-after: a source held for an hour-long Retry-After is asked again at the new cap, and nonsense is refused', async () => {
    await heldForAnHour('set-retry-after.test', async (handle, grants, retryAfterCaps) => {
      const grantsBefore = grants();
      await expect(handle.executeUpdate(setMaxRetryAfterUpdate, { args: [{ maxRetryAfterMs: 500 }] })).rejects.toMatchObject(rejection(/maxRetryAfterMs must be a number of ms from 1000 to 86400000, not 500/));
      await expect(handle.executeUpdate(setMaxRetryAfterUpdate, { args: [{} as never] })).rejects.toMatchObject(rejection(/setMaxRetryAfter needs \{"maxRetryAfterMs"/));
      const answer = await handle.executeUpdate(setMaxRetryAfterUpdate, { args: [{ maxRetryAfterMs: 30_000 }] });
      const cappedAt = await env.currentTimeMs();
      expect(answer).toMatch(/^longest Retry-After honoured set to 30 s \(was 900 s\); the Retry-After hold now ends at /);
      const stats = await handle.query(statsQuery);
      expect(stats.alerts.at(-1)).toContain(`max-retry-after: ${answer}`);
      expect(stats.maxRetryAfterS).toBe(30);
      expect(Math.abs(Date.parse(stats.retryAfterUntil!) - (cappedAt + 30_000))).toBeLessThanOrEqual(1_000);
      await env.sleep(20_000);
      expect(grants()).toBe(grantsBefore);
      await env.sleep(60_000);
      // Granted again after the new cap, its grants carrying it to the activities' own 429 blocks.
      expect(grants()).toBeGreaterThan(grantsBefore);
      expect(retryAfterCaps.at(-1)).toBe(30_000);
    });
  });

  it('fails a start input it cannot use, saying why; says what addWork ignored; and says when a chunk id names work done before', async () => {
    const { taskQueue, workflowId } = ids('hand.test');
    const { grants, acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    const worker = await monitorWorker(env, taskQueue, acts);
    const sent = () => grants.reduce((n, g) => n + g.sent, 0);
    await worker.runUntil(async () => {
      // As written by hand with the Temporal CLI: before, every workflow task of this monitor failed, for ever.
      const bad = await env.client.workflow.start(crawlMonitorWorkflow, { taskQueue, workflowId: `${workflowId}-bad`, args: [{ source: 'bad.test', config: { rate: 'fast' as unknown as number } }] });
      const failure = await bad.result().then(() => undefined, (err: WorkflowFailedError) => err.cause);
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect(failure!.message).toBe('invalid monitor input: config: rate must be a finite number of requests per second');
      // Under another source's id: `crawl` commands could not find it, and `crawl start` would start a second monitor for the site.
      const misnamed = await env.client.workflow.start(crawlMonitorWorkflow, { taskQueue, workflowId: monitorWorkflowId('museum.example'), args: [{ source: 'museum', config: { rate: 1 } }] });
      const why = await misnamed.result().then(() => undefined, (err: WorkflowFailedError) => err.cause);
      expect(why?.message).toBe('invalid monitor input: the workflow id of source "museum"\'s monitor must be crawl-monitor:museum, not crawl-monitor:museum.example: a source has one monitor, which `crawl` commands find by that id');
      expect(grants).toHaveLength(0);

      const url = (n: number) => `https://hand.test/img/${n}.jpg`;
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId, args: [{ source: 'hand.test', config: { rate: 2 }, options: { finishWhenDrained: false }, work: [{ chunkId: 'c1', urls: [url(0), url(1)] } as WorkChunk] }],
      });
      await env.sleep(30_000);
      await handle.signal(addWorkSignal, [{ chunkId: 'c1', urls: [url(2)] } as WorkChunk, 'junk' as unknown as WorkChunk, { chunkId: 'c2', urls: [url(3)] } as WorkChunk]);
      await env.sleep(30_000);
      const stats = await handle.query(statsQuery);
      expect(stats.urls).toMatchObject({ total: 3, finished: 3 });
      expect(stats.counts.done).toBe(3);
      expect(stats.alerts.join('\n')).toContain('addWork ignored: chunk "c1" was added before and is not crawled again. A chunkId names its URLs for good: give other URLs a new one.');
      expect(stats.alerts.join('\n')).toContain('addWork ignored: work item 2 must be a chunk such as');
      expect(await handle.executeUpdate(stopUpdate)).toBe('stopped');
      await handle.result();
      const sentBefore = sent();
      expect(sentBefore).toBe(3);

      // A new run of the monitor given chunk c1 again (its batch completed above): not crawled,
      // as the same chunk from `crawl start` must not be, and said so.
      const again = await env.client.workflow.execute(crawlMonitorWorkflow, {
        taskQueue, workflowId, args: [{ source: 'hand.test', config: { rate: 2 }, work: [{ chunkId: 'c1', urls: [url(4)] } as WorkChunk] }],
      });
      expect(sent()).toBe(sentBefore);
      expect(again.alerts.join('\n')).toMatch(new RegExp(`chunk "c1" counts as finished: its batch ${workflowId}/batch:c1 has ended already\\. A chunkId names its URLs for good`));
    });
  });
});
