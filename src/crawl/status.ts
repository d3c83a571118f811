import type { Client, WorkflowExecutionDescription, WorkflowExecutionInfo, WorkflowHandle } from '@temporalio/client';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { CRAWL_DONE, CRAWL_ERRORS, CRAWL_RATE, CRAWL_STATE, FINISHED } from '../temporal/searchAttributes';
import { callSignal } from '../shared/callSignal';
import { errorText } from '../shared/errorText';
import { STOPPED_BATCHES_WAIT_MS } from '../shared/heartbeat';
import { statsQuery, stopUpdate } from '../workflows/messages';
import { monitorWorkflowId } from '../workflows/monitorState';
import { answersNote, behindNote, connectionsFullKind, connectionsFullNote, type CrawlCommand, hostCrawlDelayNote, type MonitorStats, networkDownNote, quotaNote, quotaPaceNote, slowedNote } from '../workflows/monitorStats';
import { BEHIND_MISS_RATE } from '../politeness/missedSlots';
import { crawlSecondsLeft, durationText, secondsLeft } from '../workflows/timeLeft';
import { fulfilsWithin } from '../shared/concurrency';
import { envText } from '../shared/env';
import { hostSourceName } from './manifest';
import { DEFAULT_ADDRESS } from '../temporal/connectionSettings';
import { endedRunsHint } from '../temporal/connect';
import { shellWord } from '../shared/shellWord';
import { textTable } from '../shared/textTable';
import { isServerUnreachable } from './serverOutage';
import { type Unreported, unreportedOf, unreportedUrls, withUnreported } from './unreported';

export interface SourceStatus {
  source: string;
  workflowStatus: string;
  stats: MonitorStats | null;
  /**
   * A running monitor that did not answer its status query: what its search attributes last
   * said, and why. One not asked yet (StatusPoller) has only `total`, the URLs this run gave it.
   */
  unanswered?: { note: string; state?: string; rate?: number; done?: number; errors?: number; total?: number };
  /** Why a monitor that did not complete ended: its failure (a start input it could not use), or a termination's reason. */
  ended?: string;
  /** A running monitor's task queue: the workers that serve it poll there (see taskQueueWorkers). */
  taskQueue?: string;
  /** Of the stats' finished URLs, those its running fetch activities finished and have not reported yet (unreported.ts). */
  unreported?: number;
}

/** A status query is answered by a worker: with none running it would wait for one for ever. */
export const STATUS_QUERY_TIMEOUT_MS = 10_000;

export class UnknownSourceError extends Error {
  constructor(source: string, similar: readonly string[] = []) {
    super(`no crawl monitor for source "${source}" (workflow ${monitorWorkflowId(source)}). ` +
      (similar.length ? `Did you mean ${similar.map((s) => `"${s}"`).join(' or ')}? ` : '') +
      'Run `crawl status` to list the sources being crawled; sources are named by host (with a port other than the default) unless the manifest says otherwise.');
  }
}

/** Suggestions for a source named as it is not known: at most this many. */
const MAX_SIMILAR = 3;

/**
 * Known sources an operator may have meant: the same host without its port or `www.`, in
 * another case, or a name that holds the one given (`127.0.0.1` for `127.0.0.1:8080`).
 */
export function similarSources(given: string, known: Iterable<string>): string[] {
  // A host as people write it (Bücher.Example) against the name it is crawled under (xn--bcher-kva.example).
  const bare = (s: string) => (hostSourceName(s) ?? s.toLowerCase()).replace(/\.$/, '').replace(/:\d+$/, '').replace(/^www\./, '');
  const g = given.toLowerCase();
  const found: string[] = [];
  for (const k of known) {
    if (k === given) continue;
    const l = k.toLowerCase();
    if (bare(k) === bare(given) || (g.length >= 3 && l.includes(g)) || (l.length >= 3 && g.includes(l))) found.push(k);
  }
  return found.sort().slice(0, MAX_SIMILAR);
}

/**
 * The note for `crawl start` when sources it gave work to are paused or halted (their running
 * monitors' CrawlState), since their new URLs wait for an operator: before, the start said
 * nothing of it, and the URLs simply did not move. Undefined when none is.
 */
export function heldSourcesNote(monitors: ReadonlyMap<string, Pick<WorkflowExecutionInfo, 'typedSearchAttributes'>>, sources: Iterable<string>): string | undefined {
  const held = [...sources].flatMap((source) => {
    const state = monitors.get(source)?.typedSearchAttributes.get(CRAWL_STATE);
    return state === 'paused' || state === 'halted' ? [{ source, state }] : [];
  });
  if (held.length === 0) return undefined;
  const named = held.slice(0, 5).map((h) => `${h.source} (${h.state})`).join(', ');
  const shown = held.length > 5 ? `${named} and ${held.length - 5} more` : named;
  const one = held.length === 1 ? held[0]!.source : undefined;
  return `${one ? 'a source' : `${held.length} sources`} given work ${one ? 'is' : 'are'} paused or halted: ${shown}; ` +
    `the URLs added wait until \`crawl resume ${one ?? 'SOURCE...'}\`${one ? '' : ' (or --all)'} (\`crawl status\` says why each waits)`;
}

/**
 * A source's monitor and its workflow status, from listMonitors' row when there is one (no call
 * to the server), else described; an unknown source is a clear error. A run that continued as
 * new has a successor the listing may not show yet: that one is described.
 */
export async function monitorOf(client: Client, source: string, listed?: WorkflowExecutionInfo): Promise<{ handle: WorkflowHandle; status: string; description: Pick<WorkflowExecutionInfo, 'status' | 'taskQueue' | 'typedSearchAttributes'>; described?: WorkflowExecutionDescription }> {
  const handle = client.workflow.getHandle(monitorWorkflowId(source));
  if (listed && listed.status.name !== 'CONTINUED_AS_NEW') return { handle, status: listed.status.name, description: listed };
  try {
    const description = await handle.describe();
    return { handle, status: description.status.name, description, described: description };
  } catch (err) {
    // Listing every monitor costs a second at thousands: only on this way out.
    if (err instanceof WorkflowNotFoundError) throw new UnknownSourceError(source, similarSources(source, (await listMonitors(client).catch(() => new Map())).keys()));
    throw err;
  }
}

/** Runs an update call, failing with a clear message when no worker answers it in time (see the CLI). */
export type Answered = <T>(call: () => Promise<T>) => Promise<T>;

/**
 * Stops a monitor and waits for it to complete, which it does once its batches' fetch activities
 * have stopped (at their next heartbeat, within seconds; at most STOPPED_BATCHES_WAIT_MS). Only
 * then may the source be started again without fetching what those activities were finishing.
 * Resolves with the update's answer, and whether the monitor completed in time.
 */
export async function stopMonitor(handle: WorkflowHandle, answered: Answered = (call) => call()): Promise<{ answer: string; completed: boolean; urls?: MonitorStats['urls'] }> {
  const answer = await answered(() => handle.executeUpdate(stopUpdate));
  let urls: MonitorStats['urls'] | undefined;
  const completed = await fulfilsWithin(handle.result().then((r: MonitorStats) => { urls = r?.urls; }), STOPPED_BATCHES_WAIT_MS + 15_000);
  return { answer, completed, ...(urls ? { urls } : {}) };
}

/** What `crawl stop` says of a stopped source: its URLs left without a record, and how they are crawled after all. */
export function stoppedAnswer(answer: string, urls: MonitorStats['urls'] | undefined): string {
  const left = urls ? urls.total - urls.finished : 0;
  if (!urls || left <= 0) return answer;
  return `${answer} (${urls.finished} of its ${urls.total} URLs finished; the other ${left} have no record: starting its manifest again, or \`crawl run\` of it, crawls them)`;
}

/** What an operator calls the source's state: the monitor's own while it runs. */
function displayState(s: SourceStatus): string {
  // A monitor an operator stopped has completed too, but not its URLs: say which. Otherwise the
  // Web UI's word (CrawlState), not the execution status, so both surfaces name it alike.
  if (s.workflowStatus === 'COMPLETED') return (s.stats?.state ?? s.unanswered?.state) === 'stopped' ? 'stopped' : 'finished';
  if (s.workflowStatus !== 'RUNNING') return s.workflowStatus.toLowerCase();
  return s.stats?.state ?? (s.unanswered?.state ? `${s.unanswered.state} (last known)` : 'unknown');
}

/** The states `crawl status --state` picks rows by: the monitor's own, then how its run ended. */
export const STATUS_STATES = ['running', 'paused', 'cooling', 'halted', 'stopped', 'finished', 'failed', 'terminated', 'timed_out', 'canceled'] as const;

/** A row's state as `--state` matches it: as the table shows it, last known or not. */
export function rowState(s: SourceStatus): string {
  return displayState(s).replace(/ \(last known\)$/, '');
}

/** `--state halted,paused`: the states named, each one of STATUS_STATES (an error naming them otherwise). */
export function parseStates(value: string): Set<string> {
  const states = value.split(',').map((v) => v.trim().toLowerCase()).filter(Boolean);
  const unknown = states.filter((v) => !(STATUS_STATES as readonly string[]).includes(v));
  if (states.length === 0 || unknown.length) throw new Error(`${unknown.length ? `unknown state ${unknown.map((u) => JSON.stringify(u)).join(', ')}` : 'no state given'}: give one or more of ${STATUS_STATES.join(', ')}, comma-separated`);
  return new Set(states);
}

export interface SourceStatusOptions {
  signal?: AbortSignal;
  queryTimeoutMs?: number;
  /** The monitor as listMonitors found it: its status and search attributes, without a describe call. */
  listed?: WorkflowExecutionInfo;
}

/** `signal` aborts every call (Ctrl-C); a query no worker answers in time falls back to the search attributes. */
export async function sourceStatus(client: Client, source: string, opts: SourceStatusOptions = {}): Promise<SourceStatus> {
  return opts.signal ? client.withAbortSignal(opts.signal, () => statusOf(client, source, opts)) : statusOf(client, source, opts);
}

async function statusOf(client: Client, source: string, opts: SourceStatusOptions): Promise<SourceStatus> {
  // The client cancels a call when its signal aborts, but one made on a signal aborted already
  // runs on, retrying a dead server until its deadline (~20 s).
  opts.signal?.throwIfAborted();
  const { handle, status, description, described } = await monitorOf(client, source, opts.listed);
  opts.signal?.throwIfAborted();
  let stats: MonitorStats | null = null;
  let unreported: number | undefined;
  if (status === 'RUNNING') {
    const timeoutMs = opts.queryTimeoutMs ?? STATUS_QUERY_TIMEOUT_MS;
    const call = callSignal(timeoutMs, opts.signal);
    try {
      // Read before the query, from the describe made already: a grant reported in between
      // (milliseconds) is counted twice for one poll, where read after the query a grant
      // finished but not yet reported (its batch's workflow task and signal: up to seconds on a
      // busy worker) went missing from both. Unreadable (a server that just went away), the
      // monitor's own counts stand.
      const raw = described?.raw;
      const found = raw ? await unreportedWithin(client, () => unreportedOf(client, raw), opts.signal) : undefined;
      stats = await client.withAbortSignal(call.signal, () => handle.query(statsQuery));
      // A status from a listing (no describe): read after, and only while a grant may be out.
      const u = found ?? (!raw && stats.batches.active > 0
        ? await unreportedWithin(client, async () => unreportedOf(client, (await handle.describe()).raw), opts.signal)
        : undefined);
      const merged = u ? withUnreported(stats, u) : stats;
      if (u && merged !== stats && unreportedUrls(u) > 0) unreported = unreportedUrls(u);
      stats = merged;
    } catch (err) {
      if (!call.timedOut() || opts.signal?.aborted) throw err;
      return { ...listedStatus(source, description, `no worker answered within ${timeoutMs / 1000} s: is a crawl worker running on task queue ${description.taskQueue}?`), taskQueue: description.taskQueue };
    } finally {
      call.done();
    }
  } else if (status === 'COMPLETED') {
    stats = (await handle.result()) as MonitorStats;
    // A monitor of an earlier build completed with its mode in the result: running, for a crawl
    // whose URLs had all ended. Named as the table, the Web UI and newer monitors name it.
    if (stats && stats.state !== 'stopped') stats = { ...stats, state: FINISHED };
  } else if (status !== 'CONTINUED_AS_NEW') {
    const ended = await handle.result().then(() => undefined, (err: unknown) => whyEnded(err));
    if (ended) return { source, workflowStatus: status, stats, ended };
  }
  return { source, workflowStatus: status, stats, ...(status === 'RUNNING' ? { taskQueue: description.taskQueue } : {}), ...(unreported !== undefined ? { unreported } : {}) };
}

/**
 * Reading the heartbeats gets a few seconds of its own, apart from the query's time: a slow
 * describe would otherwise leave the query none, and the status would say no worker answered.
 */
const UNREPORTED_READ_MS = 3_000;

async function unreportedWithin(client: Client, read: () => Promise<Unreported>, outer?: AbortSignal): Promise<Unreported | undefined> {
  const call = callSignal(UNREPORTED_READ_MS, outer);
  try {
    // Every call `read` makes, however deep, carries the signal (the client's call context).
    return await client.withAbortSignal(call.signal, read);
  } catch {
    return undefined;
  } finally {
    call.done();
  }
}

function whyEnded(err: unknown): string | undefined {
  if (err instanceof WorkflowFailedError) return err.cause?.message || undefined;
  return err instanceof Error ? err.message : undefined;
}

const MONITOR_ID_PREFIX = /^crawl-monitor:/;

/**
 * The sources whose monitors closed after `sinceMs` (a continue-as-new is no close), from the
 * server's visibility listing: a few rows a poll, where listing every running monitor cost the
 * embedded server ~2 ms each (StatusPoller).
 */
export function listClosedSince(client: Client, sinceMs: number, signal?: AbortSignal): Promise<Set<string>> {
  return listSources(client, `CloseTime > '${new Date(sinceMs).toISOString()}' AND ExecutionStatus != 'ContinuedAsNew'`, signal);
}

/** The sources of the monitors the visibility listing gives for `condition`. */
async function listSources(client: Client, condition: string, signal?: AbortSignal): Promise<Set<string>> {
  const list = async () => {
    const out = new Set<string>();
    for await (const wf of client.workflow.list({ query: `WorkflowType = 'crawlMonitorWorkflow' AND ${condition}`, pageSize: 1000 })) out.add(wf.workflowId.replace(MONITOR_ID_PREFIX, ''));
    return out;
  };
  return signal ? client.withAbortSignal(signal, list) : list();
}

/**
 * `crawl status` on a server with no crawl monitor at all printed a table header and nothing
 * else: no word of which server it asked, nor that `crawl run`'s own server ends with the run.
 */
export function noMonitorsNote(address: string, namespace: string, cwd = process.cwd()): string {
  const theirs = envText('TEMPORAL_ADDRESS') ? '' : endedRunsHint(cwd);
  return `no crawl has been started on the Temporal server at ${address} (namespace ${namespace}): \`crawl start MANIFEST\` starts one there (with \`crawl worker\`s to do it), ` +
    `\`crawl run MANIFEST\` a whole crawl on a server of its own${theirs}`;
}

/**
 * The sources whose monitors started a run after `sinceMs` (a continue-as-new among them), from
 * the visibility listing: for `status --watch` of every source, which follows crawls started
 * after it began.
 */
export function listStartedSince(client: Client, sinceMs: number): Promise<Set<string>> {
  return listSources(client, `StartTime > '${new Date(sinceMs).toISOString()}'`);
}

/** Says once on stderr that a listing failed, in the words `text` gives (the poll goes on without it). */
function listingWarner(text: (err: unknown) => string): (err: unknown) => void {
  let told = false;
  return (err) => {
    if (told) return;
    told = true;
    process.stderr.write(`crawl: ${text(err)}\n`);
  };
}

/** For `run` and `status --watch`: says once on stderr that listClosedSince failed (StatusPoller goes on without it). */
export function closedListingWarner(): (err: unknown) => void {
  return listingWarner((err) => `cannot list the monitors that closed (${errorText(err)}); finished sources are noticed in turn instead`);
}

/**
 * For `status --watch`: says once on stderr that listStartedSince failed. An unreachable server
 * is thrown on instead, so that the poll fails and the watch reports the outage and waits.
 */
export function startedListingWarner(): (err: unknown) => void {
  const warn = listingWarner((err) => `cannot list the monitors started since this watch began (${errorText(err)}); sources whose crawls start from now on are not shown: start the watch again to see them`);
  return (err) => {
    if (isServerUnreachable(err)) throw err;
    warn(err);
  };
}

/**
 * Every crawl monitor the server knows, by source, via the visibility store: one row per
 * source, its latest run (a run that continued as new only when its successor is not listed
 * yet). A row carries the run's status and search attributes, so `crawl status` need not
 * describe each monitor again (3,000 describes took 20 s of a busy embedded server).
 */
export async function listMonitors(client: Client, opts: { running?: boolean } = {}): Promise<Map<string, WorkflowExecutionInfo>> {
  const monitors = new Map<string, WorkflowExecutionInfo>();
  const query = `WorkflowType = 'crawlMonitorWorkflow'${opts.running ? ` AND ExecutionStatus = 'Running'` : ''}`;
  for await (const wf of client.workflow.list({ query })) {
    const source = wf.workflowId.replace(MONITOR_ID_PREFIX, '');
    const seen = monitors.get(source);
    if (!seen || later(wf, seen)) monitors.set(source, wf);
  }
  return monitors;
}

/** Whether run `a` is the source's monitor rather than `b`: a run that did not continue as new, else the later one. */
function later(a: WorkflowExecutionInfo, b: WorkflowExecutionInfo): boolean {
  const [aGone, bGone] = [a.status.name === 'CONTINUED_AS_NEW', b.status.name === 'CONTINUED_AS_NEW'];
  return aGone !== bGone ? bGone : a.startTime > b.startTime;
}

/** A monitor not asked (or not answering): its status, and the figures its search attributes last had. */
export function listedStatus(source: string, info: Pick<WorkflowExecutionInfo, 'status' | 'typedSearchAttributes'>, note: string): SourceStatus {
  const attrs = info.typedSearchAttributes;
  return {
    source, workflowStatus: info.status.name, stats: null,
    unanswered: { note, state: attrs.get(CRAWL_STATE), rate: attrs.get(CRAWL_RATE), done: attrs.get(CRAWL_DONE), errors: attrs.get(CRAWL_ERRORS) },
  };
}

export interface MonitoringUpdate {
  event: 'monitoring_update';
  time: string;
  /**
   * `workersBehind`: running sources that missed 30% or more of their recent slots (see behindNote).
   * `networkDown`: running sources whose requests a worker could not send in the last five minutes because its own network looked down (networkDownNote).
   * `secondsLeft`: the longest of the running sources' (sourceSecondsLeft); null when none has one. Paused and halted sources wait for an operator and are not in it.
   * `errors`: URLs whose last try failed (a final error record); `retries`: tries that failed with tries left, their URLs to go again.
   */
  global: { sources: number; running: number; paused: number; halted: number; waiting: number; ratePerS: number; targetPerS: number; done: number; errors: number; retries: number; finishedUrls: number; totalUrls: number; imagesPerS: number | null; secondsLeft: number | null; workersBehind: number; connectionsFull: number; networkDown: number };
  sources: Record<string, { state: string; rate: number; target: number; done: number; errors: number; retries: number; linkrot: number; content: number; robots: number; refused: number; finished: number; total: number; secondsLeft: number | null; breaker: string; retryAfterUntil: string | null; quotaUntil: string | null; quotaLimit: number | null; quotaPace: { limit: number; everyS: number } | null; crawlDelayUntil: string | null; robotsRetryAt: string | null; robotsError: string | null; robotsHostWait: { error: string; until: string } | null; hostCrawlDelay: { origin: string; delayS: number } | null; storeRetryAt: string | null; storeError: string | null; workersBehind: boolean; connectionsFull: boolean; networkDownAt: string | null; haltReason: string | null; slowed: { by: string; at: string; backAt: string } | null; note?: string }>;
}

/**
 * Where images/s is measured from: the oldest sample of the last `windowMs`. Done counts move in
 * steps, once per grant (10-60 s): over the last poll alone the figure read 0 nearly always,
 * and over a few seconds 0 or several times the true rate.
 */
export class DoneRate {
  private readonly samples: { atMs: number; done: number }[] = [];

  constructor(private readonly windowMs = 60_000) {}

  baseline(): { atMs: number; done: number } | undefined {
    return this.samples[0];
  }

  record(atMs: number, done: number): void {
    this.samples.push({ atMs, done });
    while (atMs - this.samples[0]!.atMs > this.windowMs) this.samples.shift();
  }
}

/** One JSON line for operators, like the original system's monitoring_update. */
export function monitoringUpdate(statuses: SourceStatus[], previous?: { atMs: number; done: number }, nowMs = Date.now()): MonitoringUpdate {
  const sources: MonitoringUpdate['sources'] = {};
  let rate = 0, target = 0, done = 0, errors = 0, retries = 0, finished = 0, total = 0, running = 0, paused = 0, halted = 0, waiting = 0, behind = 0, slow = 0, networkDown = 0;
  const left: (number | null)[] = [];
  for (const s of statuses) {
    const st = s.stats;
    const state = displayState(s);
    if (state === 'halted') halted++;
    if (s.workflowStatus === 'RUNNING') running++;
    if (!st) {
      const u = s.unanswered;
      done += u?.done ?? 0;
      errors += u?.errors ?? 0;
      total += u?.total ?? 0;
      sources[s.source] = {
        state, rate: u?.rate ?? 0, target: 0, done: u?.done ?? 0, errors: u?.errors ?? 0, retries: 0, linkrot: 0, content: 0, robots: 0, refused: 0, finished: 0, total: u?.total ?? 0, secondsLeft: null,
        breaker: '', retryAfterUntil: null, quotaUntil: null, quotaLimit: null, quotaPace: null, crawlDelayUntil: null, robotsRetryAt: null, robotsError: null, robotsHostWait: null, hostCrawlDelay: null, storeRetryAt: null, storeError: null, workersBehind: false, connectionsFull: false, networkDownAt: null, haltReason: null, slowed: null, ...(u ? { note: u.note } : s.ended ? { note: s.ended } : {}),
      };
      continue;
    }
    const live = s.workflowStatus === 'RUNNING';
    const held = live && waitingFor(st) !== undefined;
    if (held) waiting++;
    const slotsMissed = live && behindNote(st) !== undefined;
    if (slotsMissed) behind++;
    const siteSlow = live && connectionsFullNote(st) !== undefined;
    if (siteSlow) slow++;
    const networkDownAt = live && networkDownNote(st) !== undefined ? st.networkDownAt! : null;
    if (networkDownAt) networkDown++;
    if (live && st.state === 'paused') paused++;
    // What is being sent now: a paused, halted, cooling or held source sends nothing, whatever its rate.
    rate += live && st.state === 'running' && !held ? st.rate : 0;
    target += live ? st.target : 0;
    done += st.counts.done;
    errors += st.counts.error;
    retries += st.counts.retries;
    finished += st.urls.finished;
    total += st.urls.total;
    // Counts from its last answer (StatusPoller): say that this one went unanswered; else what
    // the table's note says of what came from the site (pages, one image for every URL).
    const note = s.unanswered?.note ?? (live ? answersNote(st) : s.workflowStatus === 'COMPLETED' ? answersNote(st, null) : undefined);
    const secondsLeft = sourceSecondsLeft(s, nowMs);
    left.push(secondsLeft);
    sources[s.source] = {
      state, rate: st.rate, target: st.target, done: st.counts.done, errors: st.counts.error, retries: st.counts.retries, linkrot: st.counts.linkrot,
      content: st.counts.content, robots: st.counts.robots, refused: st.counts.refused, finished: st.urls.finished, total: st.urls.total, secondsLeft,
      breaker: `${st.breaker.windowErrors}/${st.breaker.windowRequests} in 60s, ${st.breaker.consecutiveErrors} consecutive`,
      // Holds only while the monitor runs: an ended one's stats are from its end.
      retryAfterUntil: live ? st.retryAfterUntil : null,
      quotaUntil: live ? st.quotaUntil ?? null : null,
      quotaLimit: live && st.quotaUntil ? st.quotaLimit ?? null : null,
      quotaPace: live ? st.quotaPace ?? null : null,
      // Older monitors (before this field) show a Crawl-delay hold as retryAfterUntil.
      crawlDelayUntil: live ? st.crawlDelayUntil ?? null : null,
      robotsRetryAt: live ? st.robotsRetryAt ?? null : null,
      robotsError: live && st.robotsRetryAt ? st.robotsError ?? null : null,
      robotsHostWait: live ? st.robotsHostWait ?? null : null,
      hostCrawlDelay: live ? st.hostCrawlDelay ?? null : null,
      storeRetryAt: live ? st.storeRetryAt ?? null : null,
      storeError: live ? st.storeError ?? null : null,
      workersBehind: slotsMissed,
      connectionsFull: siteSlow,
      networkDownAt,
      haltReason: st.haltReason ?? null,
      slowed: live ? st.slowed ?? null : null,
      ...(note !== undefined ? { note } : {}),
    };
  }
  const imagesPerS = previous ? Math.round(((done - previous.done) * 1000 / Math.max(1, nowMs - previous.atMs)) * 100) / 100 : null;
  return {
    event: 'monitoring_update', time: new Date(nowMs).toISOString(),
    global: { sources: statuses.length, running, paused, halted, waiting, ratePerS: round(rate), targetPerS: round(target), done, errors, retries, finishedUrls: finished, totalUrls: total, imagesPerS, secondsLeft: crawlSecondsLeft(left), workersBehind: behind, connectionsFull: slow, networkDown },
    sources,
  };
}

/**
 * A `monitoring_update` line for a log that keeps every line (`crawl run` not on a terminal):
 * `sources` holds only the sources whose entry changed since the previous line (all of them in
 * the first), and `unchangedSources` counts the rest. With every source in every line, a
 * 3,000-source crawl wrote 51 MB of progress in 9.5 minutes, ~7.7 GB a day.
 */
export class ChangedSources {
  private readonly last = new Map<string, string>();

  line(update: MonitoringUpdate): MonitoringUpdate & { unchangedSources: number } {
    const sources: MonitoringUpdate['sources'] = {};
    let unchanged = 0;
    for (const [name, entry] of Object.entries(update.sources)) {
      const text = JSON.stringify(entry);
      if (this.last.get(name) === text) {
        unchanged++;
        continue;
      }
      this.last.set(name, text);
      sources[name] = entry;
    }
    return { ...update, sources, unchangedSources: unchanged };
  }
}

/**
 * Why a source that is neither halted nor paused sends nothing right now, when something holds
 * it (the site's Retry-After, robots.txt it cannot read, a failing store, a temporary halt).
 */
export function waitingFor(st: MonitorStats): string | undefined {
  if (st.state === 'halted' || st.state === 'paused' || st.state === 'stopped') return undefined;
  if (st.retryAfterUntil) return `Retry-After until ${st.retryAfterUntil}`;
  if (st.quotaUntil) return quotaNote(st.quotaUntil, st.quotaLimit);
  if (st.robotsRetryAt) return `robots.txt unavailable${st.robotsError ? ` (${st.robotsError})` : ''}: asked again at ${st.robotsRetryAt}`;
  if (st.storeRetryAt) return `store failing (${st.storeError ?? 'see the worker log'}): nothing sent until ${st.storeRetryAt}`;
  if (st.coolingUntil) return `cooling until ${st.coolingUntil}`;
  return undefined;
}

/**
 * A host of a source spanning several waits for its robots.txt, or goes at its own Crawl-delay,
 * while the others go on (not a hold).
 */
export function hostWaitNote(st: MonitorStats): string | undefined {
  const w = st.robotsHostWait;
  return w ? `one host's robots.txt unavailable (${w.error}): its URLs wait until ${w.until}, the other hosts go on` : st.hostCrawlDelay ? hostCrawlDelayNote(st.hostCrawlDelay) : undefined;
}

/** Batches that ended without finishing their chunks (an operator terminated one, say): the monitor starts them again. */
export function lostBatchesNote(st: MonitorStats): string | undefined {
  const lost = st.batches?.lost ?? 0;
  return lost > 0 ? `${lost === 1 ? 'a batch' : `${lost} batches`} ended without finishing ${lost === 1 ? 'its chunk' : 'their chunks'}: started again within a minute (recent events in the Web UI)` : undefined;
}

/**
 * How long a running source's URLs still take at its pace (secondsLeft), rounded up to a
 * second; null for one that waits for an operator (paused, halted) or has ended. Counts from an
 * answer of an earlier poll (StatusPoller) are as good as the pace they had.
 */
export function sourceSecondsLeft(s: SourceStatus, nowMs: number): number | null {
  if (s.workflowStatus !== 'RUNNING' || !s.stats) return null;
  const left = secondsLeft(s.stats, nowMs);
  return left === null ? null : Math.ceil(left);
}

/**
 * `crawl run`'s line when sources fall behind (behindNote), from 5% of the running ones on: one
 * for all of them, again every `everyMs` while it lasts, or after 30 s if their number has
 * doubled (they cross one by one: the first line of a crawl whose 4 sources all fell behind
 * said 1); a note per source on every change would be thousands of lines.
 */
export class WorkersBehindNotice {
  private lastMs = -Infinity;
  private told = 0;

  constructor(private readonly everyMs = 5 * 60_000) {}

  next(update: MonitoringUpdate, nowMs: number): string | undefined {
    const n = update.global.workersBehind;
    const since = nowMs - this.lastMs;
    // A busy worker holds back all its sources alike; one slow source missing its one slot
    // of a grant reads 30% for a report (the average's weight), which is no news for a crawl.
    if (n < Math.max(1, Math.ceil(update.global.running * 0.05))) return undefined;
    if (since < this.everyMs && !(n >= 2 * this.told && since >= 30_000)) return undefined;
    this.lastMs = nowMs;
    this.told = n;
    return `workers behind: ${n} of ${update.global.running} running source(s) had ${BEHIND_MISS_RATE * 100}% or more of their recent slots pass unsent, ` +
      'so they get less than their rates allow (a busy worker CPU, or fetch activities starting late): add workers (crawl worker), or lower rates';
  }
}

/**
 * `crawl run`'s line when a worker's own network goes down (networkDownNote) and when it is back:
 * every source says so at once, and a line per source would be thousands of lines.
 */
export class NetworkDownNotice {
  private down = false;

  next(update: MonitoringUpdate): string | undefined {
    const n = update.global.networkDown;
    if (n > 0 === this.down) return undefined;
    this.down = n > 0;
    return n > 0
      ? `worker's network down: ${n} of ${update.global.running} running source(s) had requests that found no route while no site answered; ` +
        'they are not sent and count nothing against the sites: the crawl goes on once the network is back (the worker logs network-down)'
      : 'worker\'s network back: sources are sending again';
  }
}

/**
 * The `crawl` commands a note suggests, for a `crawl run`: typed in another terminal, they must
 * reach its server (named when it is not where commands look by default: its own server moves
 * to free ports when 7233 is taken) and its store (`reasons` reads the records under --out).
 */
export function crawlCommandFor(address: string, outDir: string, envAddress = envText('TEMPORAL_ADDRESS')): CrawlCommand {
  const env = address === (envAddress ?? DEFAULT_ADDRESS) ? '' : `TEMPORAL_ADDRESS=${address} `;
  return (args) => (args.startsWith('reasons ') ? `crawl ${args} --data-dir ${shellWord(outDir)}` : `${env}crawl ${args}`);
}

/**
 * Said at a run's start when its own server moved to free ports (7233 was taken): `crawl status`
 * typed in another terminal would otherwise ask the server on 7233, and show another crawl's
 * sources or none.
 */
export function serverElsewhereNote(address: string, crawl: CrawlCommand): string | undefined {
  const status = crawl('status');
  return status === 'crawl status' ? undefined : `this crawl's server is at ${address}: \`${status}\` (and pause, resume, ...) in another terminal`;
}

/** Each source's latest reason to wait or halt, to be told once when it changes. */
export class SourceNotes {
  private readonly last = new Map<string, string>();
  /**
   * What each source was told of its connections being full, by kind: once each, as the share of
   * its requests that waited wavers about the threshold. A new kind is news (a site first judged
   * slow, then found to refuse beyond a number open).
   */
  private readonly toldSlow = new Map<string, string>();

  /** `crawl`: how the commands a note suggests are to be written for this run. */
  constructor(private readonly crawl?: CrawlCommand) {}

  changed(statuses: SourceStatus[]): { source: string; note: string }[] {
    const out: { source: string; note: string }[] = [];
    for (const s of statuses) {
      const st = s.workflowStatus === 'RUNNING' ? s.stats : null;
      const note = st?.haltReason ? `HALTED: ${st.haltReason}` : st ? waitingFor(st) ?? hostWaitNote(st) ?? lostBatchesNote(st) ?? answersNote(st, this.crawl) : undefined;
      if (note && note !== this.last.get(s.source)) out.push({ source: s.source, note });
      if (note) this.last.set(s.source, note);
      else this.last.delete(s.source);
      // Beside a note of another kind (a placeholder served for every URL) too: both are news.
      const slow = st ? connectionsFullNote(st) : undefined;
      const kind = st ? connectionsFullKind(st) : undefined;
      if (slow && kind && kind !== this.toldSlow.get(s.source)) {
        this.toldSlow.set(s.source, kind);
        out.push({ source: s.source, note: slow });
      }
    }
    return out;
  }
}

/**
 * Below the table when sources are named: each one's recent events (at most the last 10 the
 * monitor keeps: a 429, a temporary halt, a resume, a changed catalogue entry), which were in
 * the Web UI and `--json` only, so that a terminal alone tells how a source got where it is.
 */
export function recentEventsText(statuses: SourceStatus[]): string | undefined {
  const blocks = statuses.filter((s) => s.stats?.alerts.length).map((s) => [`${s.source}: recent events`, ...s.stats!.alerts.map((a) => `  ${a}`)].join('\n'));
  return blocks.length ? blocks.join('\n\n') : undefined;
}

/** A stopped source's URLs that have no record, and how they are crawled after all. */
function notCrawledNote(urls: MonitorStats['urls']): string {
  const left = urls.total - urls.finished;
  return left > 0 ? `; ${left} URL(s) not crawled: starting its manifest again crawls them` : '';
}

export function statusTable(statuses: SourceStatus[], nowMs = Date.now()): string {
  const rows = [['SOURCE', 'STATE', 'RATE/S', 'TARGET', 'FINISHED', 'LEFT', 'DONE', 'LINKROT', 'CONTENT', 'ROBOTS', 'REFUSED', 'ERRORS', 'RETRIES', 'NOTE']];
  for (const s of statuses) {
    const st = s.stats;
    const state = displayState(s);
    const u = s.unanswered;
    const note = state === 'stopped' ? `stopped by an operator${st?.haltReason ? ` (was halted: ${st.haltReason})` : ''}${st ? notCrawledNote(st.urls) : ''}`
      : state === 'paused' && !st?.haltReason ? `paused by an operator${st?.coolingUntil ? `; its temporary halt lasts until ${st.coolingUntil}` : ''}`
      // An ended monitor's stats are from its end: a hold it had then (a Retry-After) is over.
      : st?.haltReason ?? (st && (s.workflowStatus === 'RUNNING' ? waitingFor(st) ?? hostWaitNote(st) ?? lostBatchesNote(st) ?? quotaPaceNote(st) ?? networkDownNote(st) ?? connectionsFullNote(st) ?? behindNote(st) ?? answersNote(st) ?? (st.slowed ? slowedNote(st.slowed, st.target) : undefined)
        // Its records look like images: the summary's reasons for URLs not done cannot tell.
        : s.workflowStatus === 'COMPLETED' ? answersNote(st, null) : undefined))
        ?? (st?.siteMaxRate != null ? `robots.txt Crawl-delay: at most ${st.siteMaxRate}/s${st.crawlDelayUntil ? `, next request not before ${st.crawlDelayUntil}` : ''}` : u?.note ?? s.ended ?? '');
    const left = sourceSecondsLeft(s, nowMs);
    rows.push([s.source, state, rateCell(st?.rate ?? u?.rate), rateCell(st?.target), st ? `${st.urls.finished}/${st.urls.total}` : '', left ? `~${durationText(left)}` : '', String(st?.counts.done ?? u?.done ?? ''),
      String(st?.counts.linkrot ?? ''), String(st?.counts.content ?? ''), String(st?.counts.robots ?? ''),
      // URLs the network guard (or a proxy) refused: a source of a private site crawled by workers
      // without its --allow-network read 41/41 finished, 0 done, and no column said why.
      String(st?.counts.refused ?? ''), String(st?.counts.error ?? u?.errors ?? ''),
      // Tries that failed and go again (a URL's last failing try is an error): a source whose every
      // request failed (the demo's *broken*) read 0 errors, its breaker halting it before a URL had used its tries.
      st?.counts.retries ? String(st.counts.retries) : '', note]);
  }
  // A column that says nothing for every source goes: LEFT once nothing is left to go (run's
  // closing table), RETRIES while no try has failed, REFUSED while nothing was refused.
  for (const name of ['LEFT', 'RETRIES', 'REFUSED']) {
    const c = rows[0]!.indexOf(name);
    if (rows.every((r, i) => i === 0 || r[c] === '' || (name === 'REFUSED' && r[c] === '0'))) for (const r of rows) r.splice(c, 1);
  }
  return textTable(rows);
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

/** Three significant digits: a ramping rate read 3.352 beside a target of 5; 0.005 stays 0.005. */
function rateCell(n: number | undefined): string {
  return n === undefined ? '' : String(Number(n.toPrecision(3)));
}
