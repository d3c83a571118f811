import { forEachLimit } from '../shared/concurrency';
import type { SourceStatus } from './status';

/**
 * The sources' statuses for `crawl run`'s progress, kept fresh without asking every monitor
 * every second. A status (describe + stats query) costs ~3 ms of CPU in the crawl's own
 * process, client and worker together: 200 sources asked each second took a third of a core
 * from the crawl (bench/RESULTS.md, session 13). So each poll asks every source not seen yet,
 * then at most `perPoll` of the running ones in turn; a finished monitor is not asked again.
 * A source's counts move once per grant (10-60 s) anyway.
 */
export class StatusPoller {
  private readonly known = new Map<string, SourceStatus>();
  private cursor = 0;

  constructor(
    private readonly sources: readonly string[],
    private readonly fetch: (source: string) => Promise<SourceStatus>,
    private readonly perPoll = 20,
  ) {}

  async poll(): Promise<SourceStatus[]> {
    const unseen = this.sources.filter((s) => !this.known.has(s));
    const live = this.sources.filter((s) => this.known.get(s)?.workflowStatus === 'RUNNING');
    const ask = [...unseen];
    const turns = Math.min(this.perPoll, live.length);
    for (let i = 0; i < turns; i++) ask.push(live[(this.cursor + i) % live.length]!);
    this.cursor = live.length ? (this.cursor + turns) % live.length : 0;
    await forEachLimit(ask, 16, async (s) => { this.known.set(s, keepLastKnown(this.known.get(s), await this.fetch(s))); });
    return this.statuses();
  }

  /** The latest status of every source asked so far, in the order given. */
  statuses(): SourceStatus[] {
    return this.sources.flatMap((s) => this.known.get(s) ?? []);
  }
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
