import { ApplicationFailure } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createTimeSkippingEnv } from '../support/temporal';
import { chunksOf, indexOf, monitorWorker, scriptedActivities } from '../support/monitorHarness';
import { crawlMonitorWorkflow } from '../../src/workflows/monitor';
import { monitorWorkflowId } from '../../src/workflows/monitorState';
import { resumeUpdate, statsQuery } from '../../src/workflows/messages';
import type { FetchBatchInput, FetchBatchResult, WorkChunk } from '../../src/shared/types';

/** A batch that ends without finishing its chunk is started again; nothing it left is lost. */
describe('crawl monitor: lost batches (time-skipping server)', () => {
  let env: TestWorkflowEnvironment;
  beforeEach(async () => { env = await createTimeSkippingEnv(); });
  afterEach(async () => { await env?.teardown(); });

  let n = 0;
  const ids = (source: string) => { n += 1; return { taskQueue: `lost-${n}`, workflowId: monitorWorkflowId(source) }; };
  /** Terminates a batch's current run; then the statuses of that run and of the id's latest one. */
  const terminate = async (batchId: string) => {
    const runId = (await env.client.workflow.getHandle(batchId).describe()).runId;
    await env.client.workflow.getHandle(batchId).terminate('operator test');
    return async () => {
      // The new run completes just after its last report, which may reach the monitor first: waited for, not raced.
      await env.client.workflow.getHandle(batchId).result();
      const [latest, lost] = await Promise.all([env.client.workflow.getHandle(batchId).describe(), env.client.workflow.getHandle(batchId, runId).describe()]);
      return { lost: lost.status.name, latest: latest.status.name, newRun: latest.runId !== runId };
    };
  };
  /** Pings the monitor sent to a batch, and how many failed, over all its runs (continue-as-new). */
  const pingsTo = async (monitorId: string, firstRunId: string, batchId: string) => {
    let sent = 0;
    let failed = 0;
    for (let runId: string | null | undefined = firstRunId; runId;) {
      const events: temporal.api.history.v1.IHistoryEvent[] = (await env.client.workflow.getHandle(monitorId, runId).fetchHistory()).events ?? [];
      sent += events.filter((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === 'ping'
        && e.signalExternalWorkflowExecutionInitiatedEventAttributes.workflowExecution?.workflowId === batchId).length;
      failed += events.filter((e) => e.signalExternalWorkflowExecutionFailedEventAttributes?.workflowExecution?.workflowId === batchId).length;
      runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
    }
    return { sent, failed };
  };

  it('starts again a batch an operator terminated mid-crawl: every URL recorded once and counted once, none counted finished uncrawled', async () => {
    const { taskQueue, workflowId } = ids('lost.test');
    const base = scriptedActivities(() => ({ cls: 'done', status: 200 }), { rememberRecords: true });
    // c0's second grant records its URLs and reports none of them (all unused): the records a
    // run terminated after writing them and before its report leaves. (Terminated with its
    // activity in flight, the time-skipping server stops skipping: sdk-java #1138.)
    let c0Grants = 0;
    const fetchBatch = async (input: FetchBatchInput): Promise<FetchBatchResult> => {
      if (input.batchId.endsWith('/batch:c0') && ++c0Grants === 2) {
        for (const item of input.items) base.records.push({ url: item.url, outcome: 'done' });
        return { outcomes: [], unused: input.items.map((_, i) => i) };
      }
      return base.acts.fetchBatch(input);
    };
    const worker = await monitorWorker(env, taskQueue, { ...base.acts, fetchBatch });
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId, args: [{ source: 'lost.test', config: { rate: 2 }, work: chunksOf('lost.test', 300, 100) }],
      });
      // Half a second at a time until that grant's activity has completed; its next grant is a
      // window later (outside result() and sleep() the server's time stands still).
      const c0 = env.client.workflow.getHandle(`${workflowId}/batch:c0`);
      const completed = async () => ((await c0.fetchHistory().catch(() => undefined))?.events ?? []).filter((e) => e.activityTaskCompletedEventAttributes).length;
      for (let i = 0; i < 240 && (await completed()) < 2; i++) await env.sleep(500);
      expect(c0Grants).toBe(2);
      const runs = await terminate(c0.workflowId);
      const final = await handle.result();
      // Before: the next grant to it was not delivered, its chunk counted finished, and the
      // monitor completed with what the batch had left never crawled.
      expect(final.urls).toMatchObject({ total: 300, finished: 300 });
      expect(base.records).toHaveLength(300);
      expect(new Set(base.records.map((r) => r.url)).size).toBe(300);
      // What the terminated run recorded but never reported is counted once, by the new run.
      expect(final.counts.done).toBe(300);
      expect(final.alerts.some((a) => /batch:c0 ended without finishing its chunk .*started again/.test(a))).toBe(true);
      expect(await runs()).toEqual({ lost: 'TERMINATED', latest: 'COMPLETED', newRun: true });
    });
  }, 180_000);

  it('probes a silent batch started before a continue-as-new, and starts it again when it has gone (terminated during a Retry-After hold)', async () => {
    const { taskQueue, workflowId } = ids('held.test');
    // The first answer of the source is a 429 asking for 10 minutes: no grant goes out until then.
    let throttled = false;
    const { records, acts } = scriptedActivities(() => {
      if (throttled) return { cls: 'done', status: 200 };
      throttled = true;
      return { cls: 'error', status: 429, retryAfterMs: 600_000 };
    }, { rememberRecords: true });
    const worker = await monitorWorker(env, taskQueue, acts);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId, args: [{ source: 'held.test', config: { rate: 2 }, work: chunksOf('held.test', 40, 20), options: { maxHistoryEvents: 40 } }],
      });
      await env.sleep(20_000);
      const current = env.client.workflow.getHandle(workflowId);
      expect((await current.query(statsQuery)).retryAfterUntil).not.toBeNull();
      // The batches were started by an earlier run of the monitor: none of its closing events reach this one.
      expect((await current.describe()).runId).not.toBe(handle.firstExecutionRunId);
      const runs = await terminate(`${workflowId}/batch:c20`);
      const final = await handle.result();
      expect(final.urls).toMatchObject({ total: 40, finished: 40 });
      expect(new Set(records.map((r) => r.url)).size).toBe(40);
      expect(records).toHaveLength(40);
      // Found by a probe (no grant went to it during the hold), not by a grant that failed.
      expect(await pingsTo(workflowId, handle.firstExecutionRunId, `${workflowId}/batch:c20`)).toEqual({ sent: 1, failed: 1 });
      expect(await runs()).toEqual({ lost: 'TERMINATED', latest: 'COMPLETED', newRun: true });
    });
  }, 180_000);

  it('halts the source, naming the batch, when a batch keeps failing; the other chunks finish, and resume tries it again', async () => {
    const { taskQueue, workflowId } = ids('bug.test');
    const base = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    let broken = true;
    let reads = 0;
    const chunkWork = async (input: { chunk: WorkChunk }) => {
      if (input.chunk.chunkId === 'c10') {
        reads += 1;
        if (broken) throw ApplicationFailure.nonRetryable('a bug in this chunk\'s batch', 'Bug');
      }
      return base.acts.chunkWork(input);
    };
    const worker = await monitorWorker(env, taskQueue, { ...base.acts, chunkWork });
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId, args: [{ source: 'bug.test', config: { rate: 2 }, work: chunksOf('bug.test', 30, 10) }],
      });
      let stats = await handle.query(statsQuery);
      for (let i = 0; i < 60 && stats.state !== 'halted'; i++) {
        await env.sleep(60_000);
        stats = await handle.query(statsQuery);
      }
      expect(stats.state).toBe('halted');
      expect(stats.haltReason).toMatch(/batch crawl-monitor:bug\.test\/batch:c10 ended 4 times without finishing its chunk/);
      // Started once and again three times; the source's other URLs were all crawled.
      expect(reads).toBe(4);
      expect(base.records.map((r) => indexOf(r.url as string)).sort((a, b) => a - b)).toEqual([...Array.from({ length: 10 }, (_, i) => i), ...Array.from({ length: 10 }, (_, i) => 20 + i)]);
      expect(stats.urls.finished).toBe(20);
      // Fixed (a new worker build, say): resume starts it again and the crawl completes.
      broken = false;
      await handle.executeUpdate(resumeUpdate, { args: [{}] });
      const final = await handle.result();
      expect(final.urls).toMatchObject({ total: 30, finished: 30 });
      expect(base.records).toHaveLength(30);
    });
  }, 180_000);
});
