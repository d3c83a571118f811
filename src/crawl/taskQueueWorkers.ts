import type { Client } from '@temporalio/client';

/**
 * The workers polling a task queue, as the Temporal server saw them (describeTaskQueue), for
 * `crawl status`: the first thing to know when nothing moves is whether any worker runs at all,
 * and the status queries only say that after waiting out their timeout.
 */
export interface QueueWorker {
  /** The SDK's worker identity: `<pid>@<host>`. */
  identity: string;
  /** Seconds since it last polled the queue (for workflow or activity tasks). */
  lastSeenS: number;
}

/**
 * A worker waits in a long poll of up to about a minute; one seen longer ago than this has
 * stopped (the server keeps listing it for a few minutes).
 */
export const POLLING_WITHIN_S = 120;

/** temporal.api.enums.v1.TaskQueueType's WORKFLOW and ACTIVITY (the proto package is the SDK's, not ours to import). */
const TASK_TYPES = [1, 2];

export async function taskQueueWorkers(client: Client, taskQueue: string, nowMs = Date.now()): Promise<QueueWorker[]> {
  const seen = new Map<string, number>();
  for (const taskQueueType of TASK_TYPES) {
    const res = await client.workflowService.describeTaskQueue({ namespace: client.options.namespace, taskQueue: { name: taskQueue }, taskQueueType });
    for (const p of res.pollers ?? []) {
      if (!p.identity) continue;
      const at = p.lastAccessTime ? Number(p.lastAccessTime.seconds ?? 0) * 1000 + Math.floor((p.lastAccessTime.nanos ?? 0) / 1e6) : 0;
      seen.set(p.identity, Math.max(seen.get(p.identity) ?? 0, at));
    }
  }
  return [...seen].map(([identity, at]) => ({ identity, lastSeenS: Math.max(0, Math.round((nowMs - at) / 1000)) }))
    .sort((a, b) => a.lastSeenS - b.lastSeenS || a.identity.localeCompare(b.identity));
}

/** Those seen within POLLING_WITHIN_S. */
export function polling(workers: readonly QueueWorker[]): QueueWorker[] {
  return workers.filter((w) => w.lastSeenS <= POLLING_WITHIN_S);
}

/** At most this many named in the line; the rest counted. */
const NAMED = 5;

/** `crawl status`' line for a queue: how many workers poll it, by identity. */
export function workersLine(taskQueue: string, workers: readonly QueueWorker[]): string {
  const live = polling(workers);
  if (live.length === 0) {
    const last = workers[0];
    return `no worker polls task queue ${taskQueue}${last ? ` (the last, ${last.identity}, ${last.lastSeenS} s ago)` : ''}: nothing of its sources is crawled until one runs (\`crawl worker\`, with the same CRAWL_TASK_QUEUE and TEMPORAL_ADDRESS)`;
  }
  const named = live.slice(0, NAMED).map((w) => `${w.identity}${w.lastSeenS > 5 ? ` ${w.lastSeenS} s ago` : ''}`).join(', ');
  return `${live.length} worker(s) poll task queue ${taskQueue}: ${named}${live.length > NAMED ? `, and ${live.length - NAMED} more` : ''}`;
}
