import { setBounded } from '../shared/boundedMap';
import { log } from '../shared/log';
import { TRANSFER_SAMPLE_MIN_BYTES } from '../politeness/latency';
import { DEFAULT_OPEN_LIMIT, hintOf, newOpenLimitState, noteDownload, startingOpenLimitState, takeHint, type OpenLimitChange, type OpenLimitConfig, type OpenLimitState } from '../politeness/openLimit';
import { REFUSED_HOLD_MS, REFUSED_MIN_OPEN } from '../politeness/refusalHold';
import type { OpenLimitHint, RefusalHint } from '../shared/types';

/** One request to a site, from the moment it is handed to the connection pool until its body has ended. */
export interface OpenDownload {
  readonly origin: string;
  readonly sentAtMs: number;
  /** The most requests open at the origin while this one was (itself included). */
  maxOpen: number;
  /** Requests open at the origin as this one went out (itself included). */
  readonly openAtSend: number;
  /**
   * A request the site refused while this one was open: the limit it tells of, and its status,
   * held once this one is answered (a site that refuses every request, down, tells of none).
   */
  refusal?: { limit: number; status: number };
}

const MAX_TRACKED_ORIGINS = 10_000;

/**
 * A site that refused (503, 429) a request sent while others were open, held to `limit` until
 * `untilMs`. `answerMs`: how long its answers take (smoothed); `othersUntilMs`: until when
 * requests another worker sent may still be open there (othersMayHold).
 */
interface RefusalHold {
  limit: number;
  untilMs: number;
  answerMs: number;
  othersUntilMs?: number;
}
/** Weight of each answer in a held site's answer time. */
const ANSWER_SMOOTHING = 0.2;
/**
 * The longest a worker waits for another's requests at a held site at a grant's start: a site
 * answering in 30 s would otherwise lose half of a short window.
 */
const MAX_OTHERS_WAIT_MS = 5_000;

/**
 * The worker's requests open at each site, and the limit learnt for it (politeness/openLimit.ts).
 * Counted per worker: two workers crawling one site keep to their limits each. A limit learnt
 * travels through the source's monitor to the workers of its next grants (take, hint).
 */
export class SiteDownloads {
  private readonly open = new Map<string, Set<OpenDownload>>();
  private readonly limits = new Map<string, OpenLimitState>();
  /** Sites that refused a request sent while others were open: fewer than that, for a while. */
  private readonly refusals = new Map<string, RefusalHold>();
  /** When this worker last sent a request to each site. */
  private readonly lastSentMs = new Map<string, number>();
  private readonly config: OpenLimitConfig;

  constructor(
    /** The worker's cap per site (CRAWL_MAX_CONNECTIONS_PER_SITE): a limit probed up to it is dropped. */
    maxPerSite: number,
    cfg: Partial<Omit<OpenLimitConfig, 'max'>> = {},
    private readonly onChange: (origin: string, change: OpenLimitChange) => void = logChange,
    private readonly now: () => number = Date.now,
  ) {
    this.config = { ...DEFAULT_OPEN_LIMIT, ...cfg, max: maxPerSite };
  }

  start(origin: string): OpenDownload {
    let set = this.open.get(origin);
    if (!set) this.open.set(origin, (set = new Set()));
    const d: OpenDownload = { origin, sentAtMs: this.now(), maxOpen: 0, openAtSend: set.size + 1 };
    setBounded(this.lastSentMs, origin, d.sentAtMs, MAX_TRACKED_ORIGINS);
    set.add(d);
    for (const other of set) other.maxOpen = Math.max(other.maxOpen, set.size);
    return d;
  }

  /**
   * The request has ended; `body`: a whole 2xx body and how long it took from its first byte;
   * `status`: the answer's, when one came.
   */
  end(d: OpenDownload, body?: { bytes: number; transferMs: number }, status?: number): void {
    const set = this.open.get(d.origin);
    if (set?.delete(d) && set.size === 0) this.open.delete(d.origin);
    const answered = status !== undefined && status >= 200 && status < 400;
    if (d.refusal && answered) this.holdBelow(d.origin, d.refusal, this.now() - d.sentAtMs);
    else if (answered) this.noteAnswer(d);
    if (!body || body.bytes < TRANSFER_SAMPLE_MIN_BYTES) return;
    const msPerMib = (Math.max(0, body.transferMs) * 1024 * 1024) / body.bytes;
    const change = noteDownload(this.stateOf(d.origin), { msPerMib, open: d.maxOpen, sentAtMs: d.sentAtMs }, this.now(), this.config);
    if (change) this.onChange(d.origin, change);
  }

  /**
   * The site answered the request with a throttle (429, 503, 509, 529: classify.ts). Sent while others were open, and one of those then
   * answered, that is how a limit on connections at once answers (nginx's limit_conn): asked for
   * 10 a second from a site that answers in 1 s and refuses a fifth at once, the worker sent more
   * each time the monitor's rate came back after its back-off, and the source got 2.3 images a
   * second where 4 fit (session 64). Held below the number it refused, its rate comes back
   * without another refusal. A rate limit's refusal holds it too, at the number open then.
   */
  refused(d: OpenDownload, status: number): void {
    if (d.openAtSend < REFUSED_MIN_OPEN) return;
    const limit = d.openAtSend - 1;
    // Held once one of those open with it is answered: the site served some and refused this one.
    for (const other of this.open.get(d.origin) ?? []) {
      if (other !== d && (!other.refusal || limit < other.refusal.limit)) other.refusal = { limit, status };
    }
  }

  /**
   * A site already held refused one within its hold: not the limit on requests open at once it
   * was held for (a limit of its own never refuses there), but an image its server fails on, or
   * load of the moment. Lowered each time, a slow site with a few such images went down to 2
   * open; the hold is only kept for longer.
   */
  private holdBelow(origin: string, { limit, status }: { limit: number; status: number }, answerMs: number): void {
    const known = this.refusal(origin);
    setBounded(this.refusals, origin, { ...known, limit: known?.limit ?? limit, untilMs: this.now() + REFUSED_HOLD_MS, answerMs: known?.answerMs ?? answerMs }, MAX_TRACKED_ORIGINS);
    if (!known) this.onChange(origin, { kind: 'refused', limit, status, forMs: REFUSED_HOLD_MS });
  }

  /** How long a held site takes to answer, smoothed over its answers. */
  private noteAnswer(d: OpenDownload): void {
    const r = this.refusal(d.origin);
    if (r) r.answerMs += ANSWER_SMOOTHING * (this.now() - d.sentAtMs - r.answerMs);
  }

  /**
   * A grant starting at `startMs` sends to the origin: if the site is held for refusing requests
   * beyond a number open, and this worker sent it nothing in the answer time before that start,
   * the window before may have been another worker's, whose last requests the site may still be
   * answering; this worker cannot count them, so it sends nothing there until they are answered.
   * Three workers on one address, each keeping to the site's 4 at once, were refused 7 times in
   * 1,200 URLs as grants passed from one to the next (the rate halved each time), one worker once.
   * `quietMs`: how long before the start the source's monitor granted nothing (Grant.quietBeforeMs):
   * longer than an answer takes, no worker's request of the source can be open there (after a
   * Retry-After hold or a pause, say). Returns whether it waits.
   */
  othersMayHold(origin: string, startMs: number, quietMs = 0): boolean {
    const r = this.refusal(origin);
    if (!r) return false;
    const answerMs = Math.min(r.answerMs, MAX_OTHERS_WAIT_MS);
    if (quietMs >= answerMs) return false;
    const lastSentMs = this.lastSentMs.get(origin);
    if (lastSentMs !== undefined && lastSentMs >= startMs - answerMs) return false;
    r.othersUntilMs = Math.max(r.othersUntilMs ?? -Infinity, startMs + answerMs);
    log.debug({ event: 'site-others-wait', origin, startMs, untilMs: r.othersUntilMs, lastSentMs: lastSentMs ?? null }, 'waiting for requests another worker may have open at the site');
    return r.othersUntilMs > this.now();
  }

  private refusal(origin: string): RefusalHold | undefined {
    const r = this.refusals.get(origin);
    if (!r || r.untilMs > this.now()) return r;
    this.refusals.delete(origin);
    return undefined;
  }

  /**
   * Another worker's hold (the grant's, from the source's monitor): kept to as this worker's own,
   * at the lower limit and for the longer time of the two. Without it each worker sharing the
   * site's count met a refusal of its own, and each refusal halved the source's rate.
   */
  takeRefusal(origin: string, hint: RefusalHint): void {
    // A hold about to end (the monitor's copy outlives the worker's by a signal's trip) is not worth taking up.
    if (!(hint.limit >= 1) || !(hint.forMs >= 1_000)) return;
    const known = this.refusal(origin);
    const untilMs = this.now() + Math.min(hint.forMs, REFUSED_HOLD_MS);
    setBounded(this.refusals, origin, {
      ...known, limit: Math.min(known?.limit ?? Infinity, Math.floor(hint.limit)), untilMs: Math.max(known?.untilMs ?? -Infinity, untilMs),
      answerMs: known?.answerMs ?? Math.max(0, hint.answerMs),
    }, MAX_TRACKED_ORIGINS);
    if (!known) this.onChange(origin, { kind: 'refusal-taken', limit: Math.floor(hint.limit), forMs: Math.round(untilMs - this.now()) });
  }

  /** This worker's hold of the origin for refusing beyond a number open, for its monitor. */
  refusalHint(origin: string): RefusalHint | undefined {
    const r = this.refusal(origin);
    return r && { limit: r.limit, forMs: Math.round(r.untilMs - this.now()), answerMs: Math.round(r.answerMs) };
  }

  /** A response declared a large body (TRANSFER_SAMPLE_MIN_BYTES): a site not seen to before starts with a few downloads at once. */
  large(origin: string): void {
    if (!this.limits.has(origin)) setBounded(this.limits, origin, startingOpenLimitState(this.config), MAX_TRACKED_ORIGINS);
  }

  /** A limit another worker learnt for the origin (from the grant), unless this one has judged the site itself. */
  take(origin: string, hint: OpenLimitHint): void {
    const known = this.limits.get(origin);
    const state = known ?? newOpenLimitState();
    const change = takeHint(state, hint, this.now(), this.config);
    if (!change) return;
    // A hint not taken leaves no state: the site's first large answer still gives it its start.
    if (!known) setBounded(this.limits, origin, state, MAX_TRACKED_ORIGINS);
    this.onChange(origin, change);
  }

  /** What this worker has judged of the origin, for its monitor; undefined before a judgement. */
  hint(origin: string): OpenLimitHint | undefined {
    const state = this.limits.get(origin);
    return state && hintOf(state);
  }

  private stateOf(origin: string): OpenLimitState {
    let state = this.limits.get(origin);
    if (!state) setBounded(this.limits, origin, (state = newOpenLimitState()), MAX_TRACKED_ORIGINS);
    return state;
  }

  /**
   * The learnt limit, when one holds the origin below the worker's cap (`starting`: its start, not
   * yet judged; `refused`: the site refused a request with more open).
   */
  limit(origin: string): { limit: number; starting?: true; refused?: true } | undefined {
    const state = this.limits.get(origin);
    const refusal = this.refusal(origin);
    if (refusal && (state?.limit == null || refusal.limit <= state.limit)) return { limit: refusal.limit, refused: true };
    return state?.limit == null ? undefined : state.starting ? { limit: state.limit, starting: true } : { limit: state.limit };
  }

  /** Requests open at the origin: this worker's, or, while another worker's may be (othersMayHold), as many as its hold allows. */
  openAt(origin: string): number {
    const own = this.open.get(origin)?.size ?? 0;
    const r = this.refusal(origin);
    return r?.othersUntilMs !== undefined && r.othersUntilMs > this.now() ? Math.max(own, r.limit) : own;
  }
}

function logChange(origin: string, change: OpenLimitChange): void {
  log.info({ event: 'site-open-limit', origin, ...change }, changeText(change));
}

function changeText(change: OpenLimitChange): string {
  switch (change.kind) {
    case 'limited':
      return `downloads from the site slowed as more were open (median ${change.medianMsPerMib} ms a MiB against ${change.fastestMsPerMib}, ${change.open} open): held to ${change.limit} at once`;
    case 'refused':
      return `the site refused a request (${change.status}) sent with ${change.limit} others open: held to ${change.limit} at once for ${Math.round(change.forMs / 60_000)} minutes`;
    case 'refusal-taken':
      return `held to ${change.limit} at once for ${Math.ceil(change.forMs / 60_000)} minutes, as the source's monitor heard from a worker the site refused more`;
    case 'started':
      return `trying ${change.limit} downloads at once: as many kept their speed`;
    case 'taken':
      return `held to ${change.limit} downloads at once, as the source's monitor last heard from a worker`;
    case 'lowered':
      return `downloads from the site slowed again: held to ${change.limit} at once`;
    case 'probe-up':
    case 'probe-down':
      return `trying ${change.limit} downloads at once`;
    case 'back':
      return `back to ${change.limit} downloads at once: the probe did not pay`;
    case 'lifted':
      return 'more downloads at once kept adding speed: no limit of its own';
  }
}
