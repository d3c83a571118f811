import { defaultPayloadConverter, type Client, type WorkflowExecutionDescription } from '@temporalio/client';
import type { OutcomeClass } from '../shared/types';
import type { MonitorStats } from '../workflows/monitorStats';

/**
 * Outcomes a running fetch activity has reached but not yet reported to its monitor. A monitor
 * learns of a grant's outcomes when the grant ends (10-60 s of requests; a small source's whole
 * crawl in one), so a source of 30 URLs at 1/s showed 0 done, 0 images/s and 30 s left for 30 s,
 * then all 30 at once. The activity's heartbeats (every 8 s) carry what it finished, for a retry
 * to skip: the status reads them from the server (the monitor's describe, which it makes anyway,
 * and one of each running batch workflow), which asks the worker for nothing more.
 */
export interface Unreported {
  /** URLs with a final outcome, by class. */
  final: Partial<Record<OutcomeClass, number>>;
  /** Tries that failed with tries left. */
  retries: number;
  /** Requests sent for them (the time left reckons requests per URL from it). */
  requests: number;
}

/** The heartbeats' shape this reads (crawlActivities' Progress): `[index, outcome, extra]` entries. */
type Entry = [number, { cls?: unknown; final?: unknown; sent?: unknown }, unknown];

const CLASSES: ReadonlySet<string> = new Set<OutcomeClass>(['done', 'linkrot', 'robots', 'content', 'refused', 'error']);

/** What one fetch activity's last heartbeat says it finished; nothing from details it does not know. */
export function unreportedIn(details: unknown): Unreported {
  const out: Unreported = { final: {}, retries: 0, requests: 0 };
  if (!details || typeof details !== 'object') return out;
  const { slim, done } = details as { slim?: unknown; done?: unknown };
  // A heartbeat carries `slim` (builds since session 42) or `done`, not both.
  const entries = Array.isArray(slim) ? slim : Array.isArray(done) ? done : [];
  for (const entry of entries as Entry[]) {
    const outcome = Array.isArray(entry) ? entry[1] : undefined;
    if (!outcome || typeof outcome !== 'object' || typeof outcome.cls !== 'string' || !CLASSES.has(outcome.cls)) continue;
    if (outcome.final === true) out.final[outcome.cls as OutcomeClass] = (out.final[outcome.cls as OutcomeClass] ?? 0) + 1;
    else out.retries += 1;
    if (outcome.sent === true) out.requests += 1;
  }
  return out;
}

function added(a: Unreported, b: Unreported): Unreported {
  const final = { ...a.final };
  for (const [cls, n] of Object.entries(b.final) as [OutcomeClass, number][]) final[cls] = (final[cls] ?? 0) + n;
  return { final, retries: a.retries + b.retries, requests: a.requests + b.requests };
}

/** The number of URLs with a final outcome in `u`. */
export function unreportedUrls(u: Unreported): number {
  return Object.values(u.final).reduce((s, n) => s + n, 0);
}

/**
 * The monitor's stats with the unreported outcomes counted in: its counts, and the URLs
 * finished. Outcomes that would take it past its total are counted in its stats already (a
 * grant's report landed between the reads): the stats stand alone then.
 */
export function withUnreported(stats: MonitorStats, u: Unreported): MonitorStats {
  const urls = unreportedUrls(u);
  if ((urls === 0 && u.retries === 0) || stats.urls.finished + urls > stats.urls.total) return stats;
  const counts = { ...stats.counts, retries: stats.counts.retries + u.retries, requests: (stats.counts.requests ?? 0) + u.requests };
  for (const [cls, n] of Object.entries(u.final) as [OutcomeClass, number][]) counts[cls] += n;
  return { ...stats, counts, urls: { ...stats.urls, finished: stats.urls.finished + urls } };
}

type Pending = WorkflowExecutionDescription['raw']['pendingActivities'];

function fromActivities(pending: Pending): Unreported {
  let u: Unreported = { final: {}, retries: 0, requests: 0 };
  for (const a of pending ?? []) {
    if (a.activityType?.name !== 'fetchBatch') continue;
    const payload = a.heartbeatDetails?.payloads?.[0];
    if (!payload) continue;
    let details: unknown;
    try {
      details = defaultPayloadConverter.fromPayload(payload);
    } catch {
      continue; // not ours to read: the report counts it when the grant ends
    }
    u = added(u, unreportedIn(details));
  }
  return u;
}

/**
 * The unreported outcomes of a running monitor's fetch activities, from its description: its
 * own (a small source's batch runs in its monitor) and those of its running batch workflows,
 * described here.
 */
export async function unreportedOf(client: Client, monitor: WorkflowExecutionDescription['raw']): Promise<Unreported> {
  let u = fromActivities(monitor.pendingActivities);
  const children = (monitor.pendingChildren ?? []).flatMap((c) => (c.workflowId ? [c.workflowId] : []));
  const described = await Promise.all(children.map((id) => client.workflow.getHandle(id).describe().then((d) => d.raw.pendingActivities, () => undefined)));
  for (const pending of described) u = added(u, fromActivities(pending));
  return u;
}
