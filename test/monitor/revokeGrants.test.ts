import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createLocalEnv } from '../support/temporal';
import { chunksOf, scriptedActivities } from '../support/monitorHarness';
import { crawlMonitorWorkflow } from '../../src/workflows/monitor';
import { pauseUpdate, resumeUpdate, statsQuery } from '../../src/workflows/messages';
import { WORKFLOWS_PATH } from '../../src/workers/worker';
import type { FetchBatchInput, FetchBatchResult, FinalRecordInput, RequestOutcome } from '../../src/shared/types';
import { recordFile } from '../../src/shared/recordUnits';

/**
 * Fail closed, in real time on the dev server: once a monitor stops granting, the grants its
 * batches are using stop too, not at the ends of their windows (20 s at 2 requests/s here).
 */
describe('a monitor that stops granting revokes the grants in use (dev server, real time)', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => { env = await createLocalEnv(); });
  afterAll(async () => { await env?.teardown(); });

  // A source of 50 URLs has its batch run by its monitor (SMALL_SOURCE_URLS); as a child batch when told so.
  it.each<[string, string, { smallSourceUrls?: number }]>([
    ['a child batch', 'revoke', { smallSourceUrls: 0 }],
    ['the monitor\'s own batch', 'revoke-own', {}],
  ])('an operator\'s pause stops the requests of the window in use within a heartbeat; resume finishes the crawl, each URL sent once (%s)', async (_, name, options) => {
    const sends: { url: string; atMs: number }[] = [];
    const { acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    // Like the real activity: one request per slot, never before it; cancelled, it sends nothing
    // more and hands back what it had not sent.
    const fetchBatch = async (input: FetchBatchInput): Promise<FetchBatchResult> => {
      const ctx = Context.current();
      const outcomes: RequestOutcome[] = [];
      const unused: number[] = [];
      for (const [i, item] of input.items.entries()) {
        const slot = input.schedule.startMs + i * input.schedule.intervalMs;
        while (!ctx.cancellationSignal.aborted && Date.now() < slot) {
          ctx.heartbeat(i);
          await Promise.race([ctx.sleep(Math.min(100, slot - Date.now())).catch(() => undefined), ctx.cancelled.catch(() => undefined)]);
        }
        if (ctx.cancellationSignal.aborted || slot >= input.schedule.endMs) { unused.push(i); continue; }
        sends.push({ url: item.url, atMs: Date.now() });
        outcomes.push({ url: item.url, cls: 'done', status: 200, ttfbMs: 5, sent: true, final: true, attempt: item.attempt, atMs: Date.now() });
      }
      return { outcomes, unused };
    };
    const taskQueue = `${name}-pause`;
    const source = `${name}.test`;
    const workflowId = `crawl-monitor:${source}`;
    // Heartbeats (which carry a cancellation back to the activity) at most every second here; a
    // crawl worker's are every 8 s (HEARTBEAT_EVERY_MS).
    const worker = await Worker.create({
      connection: env.nativeConnection, taskQueue, workflowsPath: WORKFLOWS_PATH, activities: { ...acts, fetchBatch }, maxHeartbeatThrottleInterval: '1 second',
    });
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId, args: [{ source, config: { rate: 2 }, options, work: chunksOf(source, 50, 50, { spooled: true }) }],
      });
      // Into the second window (the first is 10 s, the next 20 s).
      while (sends.length < 26) await new Promise((r) => setTimeout(r, 100));
      const pausedAt = Date.now();
      expect(await handle.executeUpdate(pauseUpdate)).toBe('paused');
      await new Promise((r) => setTimeout(r, 6_000));
      const late = sends.filter((s) => s.atMs > pausedAt + 2_500);
      expect(late).toEqual([]);
      expect(sends.length).toBeLessThan(50);
      const stats = await handle.query(statsQuery);
      expect(stats.tokens.unused).toBeGreaterThan(0);

      expect(await handle.executeUpdate(resumeUpdate, { args: [{}] })).toBe('running');
      const final = await handle.result();
      expect(final.counts.done).toBe(50);
      expect(final.urls).toMatchObject({ total: 50, finished: 50 });
      expect(new Set(sends.map((s) => s.url)).size).toBe(50);
      expect(sends).toHaveLength(50);
      // Both sides of a revoke replay from their histories: the monitor's signals, the batch's cancellation.
      const ownBatch = options.smallSourceUrls === undefined;
      const batchIds = (await handle.fetchHistory()).events!.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes).map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes!.workflowId!);
      expect(batchIds).toEqual(ownBatch ? [] : [`${workflowId}/batch:c0`]);
      for (const id of [workflowId, ...batchIds]) {
        await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH }, await env.client.workflow.getHandle(id).fetchHistory(), id);
      }
    });
  }, 120_000);

  it('a grant revoked while its activity had written records but not reported them leaves one record per URL', async () => {
    // Record files by name, as the store holds them: writing one again replaces it.
    const files = new Map<string, { url: string }[]>();
    const fileName = (input: { unit?: FetchBatchInput['unit']; batchId: string; grantId: number }) => JSON.stringify(recordFile(input.unit, input.batchId, `g${input.grantId}`));
    const { acts } = scriptedActivities(() => ({ cls: 'done', status: 200 }));
    let first = true;
    const fetchBatch = async (input: FetchBatchInput): Promise<FetchBatchResult> => {
      const ctx = Context.current();
      const outcomes: RequestOutcome[] = input.items.map((item) => ({ url: item.url, cls: 'done', status: 200, ttfbMs: 5, sent: true, final: true, attempt: item.attempt }));
      files.set(fileName(input), outcomes.map((o) => ({ url: o.url })));
      if (first) {
        // The first grant's records are written, then its result is lost: the attempt ends as
        // cancelled, as one whose worker died after the write and whose retry was revoked.
        first = false;
        for (;;) {
          ctx.heartbeat();
          if (ctx.cancellationSignal.aborted) throw new CancelledFailure('revoked');
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      return { outcomes, unused: [] };
    };
    const recordFinal = async (input: FinalRecordInput) => { files.set(JSON.stringify(input.unit), input.outcomes.map((o) => ({ url: o.url }))); };
    const taskQueue = 'revoke-records';
    const worker = await Worker.create({
      connection: env.nativeConnection, taskQueue, workflowsPath: WORKFLOWS_PATH, activities: { ...acts, fetchBatch, recordFinal }, maxHeartbeatThrottleInterval: '1 second',
    });
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue, workflowId: 'crawl-monitor:revoke-records.test', args: [{ source: 'revoke-records.test', config: { rate: 5 }, work: chunksOf('revoke-records.test', 30, 30) }],
      });
      while (files.size === 0) await new Promise((r) => setTimeout(r, 100));
      expect(await handle.executeUpdate(pauseUpdate)).toBe('paused');
      // The revoked grant's URLs are back with the batch and its report has reached the monitor.
      for (let i = 0; i < 100 && (await handle.query(statsQuery)).tokens.unused === 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(await handle.executeUpdate(resumeUpdate, { args: [{}] })).toBe('running');
      const final = await handle.result();
      expect(final.counts.done).toBe(30);
      const urls = [...files.values()].flat().map((r) => r.url);
      expect(urls).toHaveLength(30);
      expect(new Set(urls).size).toBe(30);
    });
  }, 120_000);
});
