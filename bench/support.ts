import fs from 'node:fs';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { ProcessedUrl, UrlProcessor } from '../src/activities/crawlActivities';
import { maxInAnyWindow } from '../src/politeness/pacing';

export { startOriginProcess, type OriginArrival } from '../src/demo/startOriginProcess';

/** Shared pieces of the benchmark scripts. */

/** A URL processor that answers at once and remembers when each source was sent a request. */
export class RecordingStub implements UrlProcessor {
  readonly sends = new Map<string, number[]>();

  async process(url: string, ctx: { source: string }): Promise<ProcessedUrl> {
    const list = this.sends.get(ctx.source) ?? [];
    list.push(Date.now());
    this.sends.set(ctx.source, list);
    return { outcome: { url, cls: 'done', status: 200, ttfbMs: 1, totalMs: 1, sent: true } };
  }
}

/** Requests per second over the steady part of a run (first and last windows left out). */
export function steadyRate(times: number[], skipMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  if (sorted.length < 2) return 0;
  const from = sorted[0]! + skipMs;
  const to = sorted[sorted.length - 1]! - 1_000;
  const inside = sorted.filter((t) => t >= from && t < to).length;
  return to > from ? inside / ((to - from) / 1000) : 0;
}

export function max1s(times: number[]): number {
  return maxInAnyWindow(times, 1_000);
}

/** History events of every workflow whose id starts with the prefix (monitors and their batches). */
export async function historyEvents(client: Client, idPrefix: string): Promise<number> {
  let total = 0;
  for await (const wf of client.workflow.list({ query: `WorkflowId STARTS_WITH '${idPrefix}'` })) {
    total += wf.historyLength;
  }
  return total;
}

/**
 * History events over the workflows whose ids start with `idPrefix`: in all, and by type per kind
 * of workflow (a monitor, or one of its batches, `<monitor>/batch:<chunk>`): where a small
 * source's events go, and how many of them a race of messages added (failed workflow tasks, a
 * batch's completion that reached its monitor before the monitor completed).
 */
export async function historyEventTypes(client: Client, idPrefix: string): Promise<{ total: number; workflows: Record<string, number>; events: Record<string, Record<string, number>> }> {
  let total = 0;
  const workflows: Record<string, number> = {};
  const events: Record<string, Record<string, number>> = {};
  for await (const wf of client.workflow.list({ query: `WorkflowId STARTS_WITH '${idPrefix}'` })) {
    const kind = wf.workflowId.includes('/batch:') ? 'batch' : 'monitor';
    workflows[kind] = (workflows[kind] ?? 0) + 1;
    const byType = (events[kind] ??= {});
    const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
    total += history.events?.length ?? 0;
    for (const e of history.events ?? []) {
      const type = String(temporal.api.enums.v1.EventType[e.eventType ?? 0] ?? e.eventType).replace(/^EVENT_TYPE_/, '');
      byType[type] = (byType[type] ?? 0) + 1;
    }
  }
  return { total, workflows, events };
}

export function peakRssMb(): number {
  return Math.round(process.resourceUsage().maxRSS / 1024);
}

export function fmt(n: number, digits = 3): number {
  return Math.round(n * 10 ** digits) / 10 ** digits;
}

/**
 * CPU milliseconds used so far by this process and by each of its child processes (the
 * Temporal server, the sites), from /proc; empty on systems without it.
 */
export function cpuMsByProcess(): Map<string, number> {
  const out = new Map<string, number>();
  const self = process.cpuUsage();
  out.set('crawler', (self.user + self.system) / 1000);
  if (!fs.existsSync('/proc/self/stat')) return out;
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    const stat = readStat(`/proc/${pid}/stat`);
    if (stat?.ppid !== process.pid) continue;
    const key = stat.name.startsWith('temporal') ? 'temporal server' : stat.name === 'node' ? 'sites' : stat.name;
    out.set(key, (out.get(key) ?? 0) + stat.cpuMs);
  }
  return out;
}

/** A process's or thread's name, parent and CPU milliseconds so far from its /proc stat file; undefined once it has gone. */
function readStat(file: string): { name: string; ppid: number; cpuMs: number } | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  // The command name is parenthesised and may hold spaces: fields start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const tick = 100; // USER_HZ, 100 on Linux
  return {
    name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
    ppid: Number(fields[1]),
    cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / tick,
  };
}

function threadKind(tid: number, name: string): string {
  if (tid === process.pid) return 'main';
  // The SDK's Rust threads; the workflow sandboxes run in Node worker threads, named 'node'.
  if (name.startsWith('tokio') || name.startsWith('temporal') || name.startsWith('workflow')) return 'sdk core';
  if (name.startsWith('libvips') || name.startsWith('vips')) return 'libvips';
  return 'other';
}

/** Each live thread of this process: its kind and CPU milliseconds so far. */
function threadTimes(): Map<number, { kind: string; ms: number }> {
  const out = new Map<number, { kind: string; ms: number }>();
  const dir = `/proc/${process.pid}/task`;
  if (!fs.existsSync(dir)) return out;
  for (const entry of fs.readdirSync(dir)) {
    const stat = readStat(`${dir}/${entry}/stat`);
    if (stat) out.set(Number(entry), { kind: threadKind(Number(entry), stat.name), ms: stat.cpuMs });
  }
  return out;
}

/**
 * This process's CPU milliseconds by kind of thread while it runs: the main thread (activities,
 * the SDK's JS side), the SDK's Rust core, libvips' workers and the rest (the libuv pool, where
 * sharp runs, the workflow worker threads and V8's helpers: Linux names them all 'node').
 * libvips ends idle workers and starts new ones, so the threads are sampled every 100 ms and a
 * thread's last sample counts: at most the last 100 ms of an ended thread is missed.
 */
export function trackThreadCpu(): { stop(): Record<string, number> } {
  const first = threadTimes();
  const last = new Map(first);
  const sample = () => { for (const [tid, t] of threadTimes()) last.set(tid, t); };
  const timer = setInterval(sample, 100);
  return {
    stop() {
      clearInterval(timer);
      sample();
      const out: Record<string, number> = { main: 0, 'sdk core': 0, libvips: 0, other: 0 };
      for (const [tid, t] of last) out[t.kind] = (out[t.kind] ?? 0) + t.ms - (first.get(tid)?.ms ?? 0);
      return out;
    },
  };
}

/** CPU milliseconds per process between two cpuMsByProcess() readings. */
export function cpuMsSince(before: Map<string, number>): Record<string, number> {
  const now = cpuMsByProcess();
  return Object.fromEntries([...now].map(([k, v]) => [k, Math.round(v - (before.get(k) ?? 0))]));
}


/**
 * Median microseconds to create (open, close) an empty file in `dir`. On ext4 without a journal
 * (these machines) creating a file skips every inode of its block group freed in the last 1-6
 * minutes, one buffer-cache lookup each: after a test run or a bench has removed its thousands of
 * files, a create measured ~1 ms of CPU instead of ~30 us. Every thumbnail is a new file, so the
 * crawl pays it and sharp alone does not: printed so that a run's figures can be read with it.
 */
export function fileCreateCostUs(dir: string, count = 200): number {
  const probe = fs.mkdtempSync(`${dir}/create-probe-`);
  const us: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = process.hrtime.bigint();
    fs.closeSync(fs.openSync(`${probe}/${i}`, 'w'));
    us.push(Number(process.hrtime.bigint() - started) / 1000);
  }
  us.sort((a, b) => a - b);
  return Math.round(us[Math.floor(us.length / 2)]!);
}
