import { forEachLimit } from '../shared/concurrency';
import type { SourceStatus } from './status';

export interface StatusPollerOptions {
  /** Running sources asked each poll, in turn, besides those seen closing. */
  perPoll?: number;
  /**
   * The sources whose monitors closed after `sinceMs`, from the server's visibility listing (no
   * worker involved). With it, a source that finishes is asked at once instead of when its turn
   * comes (with 3,000 sources, every 150 polls), and the sources not asked yet are asked
   * `firstAsksPerPoll` at a time, shown meanwhile with the URLs this run gave them: asking all
   * 3,000 first kept `run` silent for 4.5 minutes. Listing every running monitor instead cost
   * the embedded server ~2 ms per monitor per poll and slowed the crawl by half.
   */
  closedSince?: (sinceMs: number) => Promise<Set<string>>;
  firstAsksPerPoll?: number;
  /**
   * The sources whose monitors started a run after `sinceMs` (visibility listing), and the time
   * the sources given were listed: a `status --watch` of every source follows the crawls started
   * after it began (it showed none of them, for as long as it ran), and a source started again
   * after its monitor ended is asked again instead of showing its old end for good.
   */
  startedSince?: { fromMs: number; list: (sinceMs: number) => Promise<Set<string>>; onError?: (err: unknown) => void };
  /** Told when a listing of closes fails; the poll goes on without it. */
  onListingError?: (err: unknown) => void;
  /** The URLs a source was given, shown as its total until it is asked. */
  expectedUrls?: (source: string) => number | undefined;
  /**
   * What a source not asked yet shows: what the listing of monitors said of it (its status and
   * search attributes). Sources listed as running are asked before closed ones, whose search
   * attributes hold their final figures already.
   */
  placeholder?: (source: string) => SourceStatus | undefined;
  /**
   * Asks not begun this long after the poll began are left undone (their sources keep what they
   * showed): with thousands of running monitors on a busy worker, each status query waited
   * ~160 ms of the server's and worker's time and a one-shot `crawl status` took 4 minutes.
   */
  askWithinMs?: number;
  now?: () => number;
}

/**
 * A monitor's close reaches the visibility listing a moment after it happens, and the client's
 * clock may differ from the server's a little: each listing reaches this far back before the
 * previous poll began. A close missed all the same is found by the turns.
 */
const CLOSE_LISTING_OVERLAP_MS = 5_000;

/**
 * The sources' statuses for `crawl run`'s progress and `crawl status --watch`, kept fresh without
 * asking every monitor every second. A status (describe + stats query) costs ~3 ms of CPU in the
 * crawl's own process, client and worker together (200 sources asked each second took a third of
 * a core from the crawl: bench/RESULTS.md, session 13), and with thousands of small sources a
 * query waits seconds behind the worker's workflow tasks. So each poll asks the sources seen
 * closing, a bounded number not asked before, and at most `perPoll` running ones in turn; a
 * finished monitor is not asked again.
 */
export class StatusPoller {
  private readonly known = new Map<string, SourceStatus>();
  private readonly askedAt = new Map<string, number>();
  private polls = 0;
  private lastPollMs?: number;
  /** Sources the last poll meant to ask but left for want of time (askWithinMs). */
  notAsked = 0;
  /** The sources in the order given, except that those listed as closed come last (see `placeholder`). */
  private readonly askOrder: string[];
  private readonly sources: string[];
  private readonly named: Set<string>;

  constructor(
    sources: readonly string[],
    private readonly fetch: (source: string) => Promise<SourceStatus>,
    private readonly opts: StatusPollerOptions = {},
  ) {
    this.sources = [...sources];
    this.named = new Set(sources);
    const placeholder = opts.placeholder;
    const listedClosed = (s: string) => (placeholder?.(s)?.workflowStatus ?? 'RUNNING') !== 'RUNNING';
    this.askOrder = placeholder ? [...sources.filter((s) => !listedClosed(s)), ...sources.filter(listedClosed)] : [...sources];
  }

  /** Takes in the sources whose monitors started since the last poll (see startedSince). */
  private async followStarts(): Promise<void> {
    const started = this.opts.startedSince;
    if (!started) return;
    const from = (this.lastPollMs ?? started.fromMs) - CLOSE_LISTING_OVERLAP_MS;
    const names = await started.list(from).catch((err: unknown) => {
      started.onError?.(err);
      return new Set<string>();
    });
    for (const s of [...names].sort()) {
      if (!this.named.has(s)) {
        this.named.add(s);
        this.sources.push(s);
        this.askOrder.push(s);
        continue;
      }
      // Ended before and started again: asked as a source new to the poller is. (A monitor that
      // continued as new is listed too, and is running here already.)
      if (this.known.get(s)?.workflowStatus !== 'RUNNING') this.known.delete(s);
    }
  }

  async poll(): Promise<SourceStatus[]> {
    this.polls += 1;
    const now = this.opts.now ?? Date.now;
    const nowMs = now();
    await this.followStarts();
    const listing = this.opts.closedSince;
    // The first poll has nobody known to have closed: it lists nothing. A listing the server
    // refuses (a visibility store without these queries) leaves the closes to the turns.
    const closed = listing && this.lastPollMs !== undefined
      ? await listing(this.lastPollMs - CLOSE_LISTING_OVERLAP_MS).catch((err: unknown) => {
        this.opts.onListingError?.(err);
        return new Set<string>();
      })
      : new Set<string>();
    this.lastPollMs = nowMs;
    const ask = new Set<string>();
    const firstAsks = listing ? this.opts.firstAsksPerPoll ?? 64 : Infinity;
    let first = 0;
    for (const s of this.askOrder) {
      const k = this.known.get(s);
      if (k && k.workflowStatus !== 'RUNNING') continue;
      if (k ? closed.has(s) : first++ < firstAsks) ask.add(s);
    }
    const live = this.sources.filter((s) => this.known.get(s)?.workflowStatus === 'RUNNING' && !ask.has(s));
    live.sort((a, b) => this.askedAt.get(a)! - this.askedAt.get(b)!);
    for (const s of live.slice(0, this.opts.perPoll ?? 20)) ask.add(s);
    const askBy = this.opts.askWithinMs === undefined ? Infinity : nowMs + this.opts.askWithinMs;
    this.notAsked = 0;
    await forEachLimit([...ask], 16, async (s) => {
      if (now() > askBy) {
        this.notAsked += 1;
        return;
      }
      this.askedAt.set(s, this.polls);
      this.known.set(s, keepLastKnown(this.known.get(s), withExpectedUrls(await this.fetch(s), this.opts.expectedUrls?.(s))));
    });
    return this.statuses();
  }

  /** The latest status of every source, in the order given; one not asked yet as its placeholder, or with the URLs it was given. */
  statuses(): SourceStatus[] {
    return this.sources.map((s) => {
      const k = this.known.get(s) ?? this.opts.placeholder?.(s);
      if (k) return k;
      const total = this.opts.expectedUrls?.(s);
      return { source: s, workflowStatus: 'RUNNING', stats: null, unanswered: { note: 'not asked yet', ...(total !== undefined ? { total } : {}) } };
    });
  }
}

/**
 * An unanswered status holds what the monitor's search attributes say, which has no URL count:
 * a source that had not answered yet counted as holding none (`run`'s total read 999 of a
 * 1,000-URL crawl for a few polls) where the manifest said how many it was given.
 */
function withExpectedUrls(status: SourceStatus, expected: number | undefined): SourceStatus {
  if (status.stats || !status.unanswered || status.unanswered.total !== undefined || expected === undefined) return status;
  return { ...status, unanswered: { ...status.unanswered, total: expected } };
}

/**
 * A running monitor that did not answer this time (its worker is busy: with 1,000 small sources
 * queries waited behind seconds of workflow tasks) keeps the counts it last answered with,
 * noted as unanswered, instead of dropping to none: `run`'s progress went 1,327/2,991 URLs with
 * three such sources counted as holding nothing.
 */
function keepLastKnown(previous: SourceStatus | undefined, next: SourceStatus): SourceStatus {
  if (next.stats || !previous?.stats || next.workflowStatus !== 'RUNNING' || previous.workflowStatus !== 'RUNNING') return next;
  return { ...previous, ...(next.unanswered ? { unanswered: next.unanswered } : {}) };
}
