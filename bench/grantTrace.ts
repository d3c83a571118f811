import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { slotCount } from '../src/activities/pacedRunner';
import type { FetchBatchInput, FetchBatchResult } from '../src/shared/types';

/**
 * Every fetch activity's grant as the worker saw it: when the monitor issued it, when its window
 * opened and closed, when the activity really started, and what it did with its slots. A worker
 * interceptor, so the crawler itself is unchanged. It shows where a source below its rate lost
 * its time: a grant that reached its activity late (its last slots pushed past the window's end),
 * a window that opened long after the previous one closed (the monitor planned late), or a
 * report's trip before the URLs handed back got another grant.
 */
export interface GrantTrace {
  source: string;
  grantId: number;
  attempt: number;
  issuedMs?: number;
  startMs: number;
  endMs: number;
  slots: number;
  items: number;
  /** When the activity began (the lateness of its grant's trip, against startMs). */
  startedMs: number;
  endedMs: number;
  sent: number;
  missed: number;
  unused: number;
}

export function grantTracer(): { grants: GrantTrace[]; interceptor: ActivityInterceptorsFactory } {
  const grants: GrantTrace[] = [];
  const interceptor: ActivityInterceptorsFactory = (ctx) => ({
    inbound: {
      async execute(input, next) {
        if (ctx.info.activityType !== 'fetchBatch') return next(input);
        const arg = input.args[0] as FetchBatchInput;
        const startedMs = Date.now();
        const result = (await next(input)) as FetchBatchResult;
        const s = arg.schedule;
        grants.push({
          source: arg.source, grantId: arg.grantId, attempt: ctx.info.attempt, issuedMs: s.issuedMs, startMs: s.startMs, endMs: s.endMs,
          slots: slotCount(s), items: arg.items.length,
          startedMs, endedMs: Date.now(), sent: result.outcomes.filter((o) => o.sent).length, missed: result.missedSlots ?? 0, unused: result.unused.length,
        });
        return result;
      },
    },
  });
  return { grants, interceptor };
}

/** One line per grant of `source`, times in seconds from its first grant's issue. */
export function describeGrants(grants: readonly GrantTrace[], source: string): string[] {
  const own = grants.filter((g) => g.source === source).sort((a, b) => a.grantId - b.grantId || a.attempt - b.attempt);
  if (own.length === 0) return [];
  const t0 = Math.min(...own.map((g) => g.issuedMs ?? g.startMs));
  const s = (ms: number) => ((ms - t0) / 1000).toFixed(1);
  return own.map((g) => `g${g.grantId}${g.attempt > 1 ? ` (attempt ${g.attempt})` : ''}: issued ${g.issuedMs !== undefined ? s(g.issuedMs) : '?'}, window ${s(g.startMs)}-${s(g.endMs)} s, `
    + `activity from ${s(g.startedMs)} (${g.startedMs > g.startMs ? `${((g.startedMs - g.startMs) / 1000).toFixed(1)} s late` : 'in time'}) to ${s(g.endedMs)}; `
    + `${g.slots} slots, ${g.items} URLs: ${g.sent} sent, ${g.missed} slots missed, ${g.unused} handed back`);
}

/**
 * Grants (first attempts) by when they were issued, in buckets of `bucketMs` from the first:
 * how many, and how long their trip to the activity took (median and longest). It shows when
 * in a crawl the worker was too busy to start activities in time.
 */
export function tripsByIssueTime(grants: readonly GrantTrace[], bucketMs: number): string[] {
  const issued = grants.filter((g) => g.attempt === 1 && g.issuedMs !== undefined);
  if (issued.length === 0) return [];
  const t0 = Math.min(...issued.map((g) => g.issuedMs!));
  const buckets = new Map<number, number[]>();
  for (const g of issued) {
    const k = Math.floor((g.issuedMs! - t0) / bucketMs);
    const trips = buckets.get(k) ?? [];
    trips.push(g.startedMs - g.issuedMs!);
    buckets.set(k, trips);
  }
  return [...buckets.entries()].sort(([a], [b]) => a - b).map(([k, trips]) => {
    trips.sort((a, b) => a - b);
    const median = trips[Math.floor(trips.length / 2)]!;
    return `${(k * bucketMs / 1000).toFixed(0)}-${((k + 1) * bucketMs / 1000).toFixed(0)} s: ${trips.length} grants, trip median ${(median / 1000).toFixed(1)} s, longest ${(trips.at(-1)! / 1000).toFixed(1)} s`;
  });
}
