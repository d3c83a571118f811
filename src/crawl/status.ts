import type { Client, WorkflowHandle } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { statsQuery } from '../workflows/messages';
import { monitorWorkflowId, type MonitorStats } from '../workflows/monitorState';

export interface SourceStatus {
  source: string;
  workflowStatus: string;
  stats: MonitorStats | null;
}

export class UnknownSourceError extends Error {
  constructor(source: string) {
    super(`no crawl monitor for source "${source}" (workflow ${monitorWorkflowId(source)}). ` +
      'Run `crawl status` to list the sources being crawled; sources are named by host unless the manifest says otherwise.');
  }
}

/** A source's monitor and its workflow status; an unknown source is a clear error. */
export async function describeMonitor(client: Client, source: string): Promise<{ handle: WorkflowHandle; status: string }> {
  const handle = client.workflow.getHandle(monitorWorkflowId(source));
  try {
    return { handle, status: (await handle.describe()).status.name };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new UnknownSourceError(source);
    throw err;
  }
}

/** What an operator calls the source's state: the monitor's own while it runs. */
function displayState(s: SourceStatus): string {
  return s.workflowStatus === 'RUNNING' ? s.stats?.state ?? 'unknown' : s.workflowStatus.toLowerCase();
}

export async function sourceStatus(client: Client, source: string): Promise<SourceStatus> {
  const { handle, status } = await describeMonitor(client, source);
  let stats: MonitorStats | null = null;
  if (status === 'RUNNING') stats = await handle.query(statsQuery);
  else if (status === 'COMPLETED') stats = (await handle.result()) as MonitorStats;
  return { source, workflowStatus: status, stats };
}

/** Every crawl monitor the server knows (running first), via the visibility store. */
export async function listSources(client: Client): Promise<string[]> {
  const names = new Set<string>();
  for await (const wf of client.workflow.list({ query: `WorkflowType = 'crawlMonitorWorkflow'` })) {
    names.add(wf.workflowId.replace(/^crawl-monitor:/, ''));
  }
  return [...names].sort();
}

export interface MonitoringUpdate {
  event: 'monitoring_update';
  time: string;
  global: { sources: number; running: number; halted: number; ratePerS: number; targetPerS: number; done: number; errors: number; finishedUrls: number; totalUrls: number; imagesPerS: number | null };
  sources: Record<string, { state: string; rate: number; target: number; done: number; errors: number; linkrot: number; content: number; robots: number; refused: number; finished: number; total: number; breaker: string; retryAfterUntil: string | null }>;
}

/** One JSON line for operators, like the original system's monitoring_update. */
export function monitoringUpdate(statuses: SourceStatus[], previous?: { atMs: number; done: number }, nowMs = Date.now()): MonitoringUpdate {
  const sources: MonitoringUpdate['sources'] = {};
  let rate = 0, target = 0, done = 0, errors = 0, finished = 0, total = 0, running = 0, halted = 0;
  for (const s of statuses) {
    const st = s.stats;
    const state = displayState(s);
    if (state === 'halted') halted++;
    if (s.workflowStatus === 'RUNNING') running++;
    if (!st) { sources[s.source] = { state, rate: 0, target: 0, done: 0, errors: 0, linkrot: 0, content: 0, robots: 0, refused: 0, finished: 0, total: 0, breaker: '', retryAfterUntil: null }; continue; }
    const live = s.workflowStatus === 'RUNNING';
    rate += live ? st.rate : 0;
    target += live ? st.target : 0;
    done += st.counts.done;
    errors += st.counts.error;
    finished += st.urls.finished;
    total += st.urls.total;
    sources[s.source] = {
      state, rate: st.rate, target: st.target, done: st.counts.done, errors: st.counts.error, linkrot: st.counts.linkrot,
      content: st.counts.content, robots: st.counts.robots, refused: st.counts.refused, finished: st.urls.finished, total: st.urls.total,
      breaker: `${st.breaker.windowErrors}/${st.breaker.windowRequests} in 60s, ${st.breaker.consecutiveErrors} consecutive`,
      retryAfterUntil: st.retryAfterUntil,
    };
  }
  const imagesPerS = previous ? Math.round(((done - previous.done) * 1000 / Math.max(1, nowMs - previous.atMs)) * 100) / 100 : null;
  return {
    event: 'monitoring_update', time: new Date(nowMs).toISOString(),
    global: { sources: statuses.length, running, halted, ratePerS: round(rate), targetPerS: round(target), done, errors, finishedUrls: finished, totalUrls: total, imagesPerS },
    sources,
  };
}

export function statusTable(statuses: SourceStatus[]): string {
  const rows = [['SOURCE', 'STATE', 'RATE/S', 'TARGET', 'FINISHED', 'DONE', 'LINKROT', 'CONTENT', 'ROBOTS', 'ERRORS', 'NOTE']];
  for (const s of statuses) {
    const st = s.stats;
    const state = displayState(s);
    const note = st?.haltReason ?? (st?.retryAfterUntil ? `Retry-After until ${st.retryAfterUntil}` : st?.coolingUntil ? `cooling until ${st.coolingUntil}` : '');
    rows.push([s.source, state, String(st?.rate ?? ''), String(st?.target ?? ''), st ? `${st.urls.finished}/${st.urls.total}` : '', String(st?.counts.done ?? ''),
      String(st?.counts.linkrot ?? ''), String(st?.counts.content ?? ''), String(st?.counts.robots ?? ''), String(st?.counts.error ?? ''), note]);
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => cell.padEnd(widths[c]!)).join('  ').trimEnd()).join('\n');
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
