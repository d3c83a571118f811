import { Context } from '@temporalio/activity';
import { Worker } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { FetchBatchInput, FetchBatchResult, OutcomeClass, RequestOutcome, WorkChunk } from '../../src/shared/types';
import { isThrottle } from '../../src/politeness/classify';
import { PAGE_BURST, pagesSinceImage } from '../../src/politeness/pageRun';
import { WORKFLOWS_PATH } from '../../src/workers/worker';

/** What the scripted "site" answers for one request. */
export type Answer = { cls: OutcomeClass; status?: number; retryAfterMs?: number; ttfbMs?: number; msPerMib?: number; page?: true };
export type Script = (url: string, attempt: number) => Answer;

export interface RecordedGrant {
  batchId: string;
  grantId: number;
  startMs: number;
  endMs: number;
  intervalMs: number;
  burstSlots: number;
  slots: number;
  /** Slots actually sent (the scripted activity sends one per slot until it is throttled). */
  sent: number;
  /** Workflow time at which the batch scheduled the activity, i.e. when it acted on the grant. */
  scheduledMs: number;
}

/**
 * A stand-in for the fetch activity that answers from a script without waiting for slots
 * (time-skipping moves workflow time, not the activity's clock), stops at the first 429/503
 * and after PAGE_BURST pages in a row like the real one, and records every grant it was given.
 */
export function scriptedActivities(script: Script, opts: { reportLastSend?: boolean; ignoreMarkDone?: boolean; rememberRecords?: boolean } = {}) {
  const grants: RecordedGrant[] = [];
  const records: Record<string, unknown>[] = [];
  /** Chunks whose done-marker was left, and by what: the batch's own step or its last fetch. */
  const doneMarkers: { chunkId: string; by: 'batch' | 'fetch' }[] = [];
  const acts = {
    async fetchBatch(input: FetchBatchInput): Promise<FetchBatchResult> {
      const outcomes: RequestOutcome[] = [];
      const unused: number[] = [];
      let retryAfterMs: number | undefined;
      let pages = 0;
      input.items.forEach((item, i) => {
        // As the real one: stops at a 429/503, and after PAGE_BURST pages in a row.
        if (retryAfterMs !== undefined || pages >= PAGE_BURST) { unused.push(i); return; }
        const a = script(item.url, item.attempt);
        const final = a.cls !== 'error' || item.attempt >= input.maxAttempts;
        const atMs = input.schedule.startMs + Math.max(0, i - input.schedule.burstSlots) * input.schedule.intervalMs;
        outcomes.push({ url: item.url, cls: a.cls, status: a.status, ttfbMs: a.ttfbMs ?? 20, sent: true, final, attempt: item.attempt, retryAfterMs: a.retryAfterMs, atMs, ...(a.page ? { page: a.page } : {}), ...(a.msPerMib !== undefined ? { msPerMib: a.msPerMib } : {}) });
        if (isThrottle(a.status)) retryAfterMs = a.retryAfterMs ?? 5_000;
        pages = pagesSinceImage(pages, outcomes.at(-1)!);
      });
      const scheduledMs = Context.current().info.scheduledTimestampMs;
      grants.push({ batchId: input.batchId, grantId: input.grantId, ...input.schedule, slots: input.items.length, sent: outcomes.length, scheduledMs });
      for (const o of outcomes) if (o.final) records.push({ url: o.url, outcome: o.cls });
      // As the real activity does: the slot of its last request (each sent item took the next slot).
      const lastSendMs = opts.reportLastSend && outcomes.length ? Math.max(...outcomes.map((o) => o.atMs!)) : undefined;
      // As the real activity does: the done-marker when the batch's last URLs all ended.
      const chunkMarkedDone = input.markDone !== undefined && !opts.ignoreMarkDone && unused.length === 0 && outcomes.every((o) => o.final);
      if (chunkMarkedDone) doneMarkers.push({ chunkId: input.markDone!.chunkId, by: 'fetch' });
      return { outcomes, unused, retryAfterMs, ...(lastSendMs !== undefined ? { lastSendMs } : {}), ...(chunkMarkedDone ? { chunkMarkedDone } : {}) };
    },
    async loadChunk(chunk: WorkChunk): Promise<string[]> {
      return chunk.urls ?? [];
    },
    async recordedUrls(): Promise<{ url: string; outcome: OutcomeClass }[]> {
      return [];
    },
    async chunkWork(input: { chunk: WorkChunk }): Promise<{ urls?: string[]; recorded: { url: string; outcome: OutcomeClass }[] }> {
      // As the store does (rememberRecords): a chunk's batch run again skips what earlier runs recorded.
      const mine = new Set(input.chunk.urls ?? []);
      const recorded = opts.rememberRecords ? records.filter((r) => mine.has(r.url as string)).map((r) => ({ url: r.url as string, outcome: r.outcome as OutcomeClass })) : [];
      return { ...(input.chunk.urls ? {} : { urls: [] }), recorded };
    },
    async markChunkDone(chunk: WorkChunk): Promise<void> {
      doneMarkers.push({ chunkId: chunk.chunkId, by: 'batch' });
    },
    async recordFinal(input: { outcomes: RequestOutcome[] }): Promise<void> {
      for (const o of input.outcomes) records.push({ url: o.url, outcome: o.cls });
    },
  };
  return { grants, records, doneMarkers, acts };
}

/**
 * A source's URLs in chunks, given inline; with `spooled`, the chunks also name a spool file (the
 * scripted activities never read it), so that they have a done-marker to leave, as a manifest's do.
 */
export function chunksOf(source: string, total: number, perChunk: number, opts: { spooled?: boolean } = {}): WorkChunk[] {
  const chunks: WorkChunk[] = [];
  for (let start = 0; start < total; start += perChunk) {
    const urls = Array.from({ length: Math.min(perChunk, total - start) }, (_, k) => `https://${source}/img/${start + k}.jpg`);
    chunks.push({ chunkId: `c${start}`, count: urls.length, urls, ...(opts.spooled ? { spool: `chunks/${source}/c${start}.txt` } : {}) });
  }
  return chunks;
}

export function indexOf(url: string): number {
  return Number(/\/(\d+)\.jpg$/.exec(url)![1]);
}

export async function monitorWorker(env: TestWorkflowEnvironment, taskQueue: string, acts: object): Promise<Worker> {
  return Worker.create({ connection: env.nativeConnection, taskQueue, workflowsPath: WORKFLOWS_PATH, activities: acts });
}

/** Every send time implied by the recorded grants (one per sent slot). */
export function sendTimes(grants: RecordedGrant[]): number[] {
  return grants.flatMap((g) => Array.from({ length: g.sent }, (_, j) => g.startMs + Math.max(0, j - g.burstSlots) * g.intervalMs));
}
