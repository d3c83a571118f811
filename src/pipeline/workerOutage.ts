import { errorCode } from '../shared/errorText';

/**
 * Tells the worker's own network outage from its sites' failures.
 *
 * Every failed request counts against its site: its breaker cools the source down, and after 50
 * failures in a row the monitor halts it for good. When the worker's own network is down (a
 * gateway, a resolver, a cable), every site fails at once, and all of them halted for good after
 * about five minutes (measured: 10 sources at 1 req/s, 289 s), for an operator to resume by hand.
 *
 * The signature of the worker's outage: connections to several sites fail without any answer
 * (no route, no DNS, no reply to the connect) and no site has answered for a while, although
 * sites did answer before. A refused connection (a reset) is an answer: the network reached the
 * host. In that state a connection that fails so is the worker's, not the site's: its request
 * never left, so its slot passes and nothing counts against the site. Requests keep going out in
 * their slots, so the first answer ends the state at once.
 *
 * A crawl whose remaining sites are all unreachable looks the same from here. So the state
 * lasts at most `maxHoldMs` without an answer; after that failures count again, and such sites
 * halt as before, only that much later.
 */

/** Connect-phase failures that say nothing reached the host and nothing came back. */
const NO_ROUTE_CODES = new Set(['ENETUNREACH', 'EHOSTUNREACH', 'ENETDOWN', 'EHOSTDOWN', 'EADDRNOTAVAIL', 'ETIMEDOUT']);

/**
 * Whether a failed request's error is one of those: a connect that found no route or had no
 * reply (the request was never written), or a resolver that could not be reached (EAI_AGAIN;
 * not ENOTFOUND, which is the DNS answering that the name does not exist).
 */
export function noRouteError(err: unknown): boolean {
  const code = errorCode(err);
  // The proxy is the worker's way out (CRAWL_PROXY): when it is down or refuses our password,
  // every site fails alike and none of them is at fault.
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'EAI_AGAIN' || code === 'EPROXYDOWN' || code === 'EPROXYAUTH') return true;
  const e = err as { syscall?: unknown; cause?: { syscall?: unknown } } | undefined;
  return code !== undefined && NO_ROUTE_CODES.has(code) && (e?.syscall ?? e?.cause?.syscall) === 'connect';
}

export interface WorkerOutageOptions {
  now?: () => number;
  /** No answer from any site for this long (ms) ... */
  quietMs?: number;
  /** ... and this many sites unreachable since the last answer: the worker's network is down. */
  minOrigins?: number;
  /** The longest the state lasts without an answer (ms). */
  maxHoldMs?: number;
  /** Called when the state begins, ends, or runs past maxHoldMs. */
  onChange?: (change: OutageChange) => void;
}

export type OutageChange =
  | { kind: 'down'; origins: number; quietMs: number }
  | { kind: 'back'; downMs: number; notCounted: number }
  | { kind: 'too-long'; downMs: number; notCounted: number };

/**
 * 2 s: every failure before the state begins counts against its site, and at 5 s, 7 of 10
 * sources at 1 req/s had five counted and cooled down for a minute (5 of 21 in 60 s). A worker
 * crawling many sites has answers many a second; one crawling few slow sites that falls quiet
 * while three others are unreachable only stops counting those sites' failures until its next
 * answer.
 */
const QUIET_MS = 2_000;
const MIN_ORIGINS = 3;
/** 15 min: longer than most outages of a network; a crawl of dead sites ends this much later. */
const MAX_HOLD_MS = 15 * 60_000;
/** Origins remembered as unreachable: enough to count to minOrigins, bounded for a long outage. */
const MAX_TRACKED = 64;

/** What the worker's activity polling and its fetch activities need to know of the watch. */
export interface WorkerNetwork {
  readonly down: boolean;
  /** Whether the network was taken to be down at any moment from `fromMs` until now. */
  wasDownSince(fromMs: number): boolean;
  /** Calls `fn` after every change of `down`; returns a function that stops that. */
  listen(fn: () => void): () => void;
}

export class WorkerOutageWatch implements WorkerNetwork {
  private readonly now: () => number;
  private readonly quietMs: number;
  private readonly minOrigins: number;
  private readonly maxHoldMs: number;
  private readonly onChange?: (change: OutageChange) => void;
  private lastAnswerAt?: number;
  /** Origins whose connections failed for want of a route since the last answer. */
  private readonly unreachable = new Set<string>();
  private downSince?: number;
  private notCounted = 0;
  private tooLong = false;
  /** When the last outage ended (an answer, or the hold ran out). */
  private endedAt?: number;
  private readonly listeners = new Set<() => void>();
  /** Failures not counted against their sites since the worker started (for activity results). */
  notCountedTotal = 0;

  constructor(opts: WorkerOutageOptions = {}) {
    this.now = opts.now ?? Date.now;
    this.quietMs = opts.quietMs ?? QUIET_MS;
    this.minOrigins = opts.minOrigins ?? MIN_ORIGINS;
    this.maxHoldMs = opts.maxHoldMs ?? MAX_HOLD_MS;
    this.onChange = opts.onChange;
  }

  /** A site answered (any status, or a refused connection): the worker's network works. */
  answered(): void {
    const now = this.now();
    this.lastAnswerAt = now;
    this.unreachable.clear();
    if (this.downSince !== undefined) {
      const change: OutageChange = { kind: 'back', downMs: now - this.downSince, notCounted: this.notCounted };
      const wasDown = this.down;
      this.downSince = undefined;
      this.notCounted = 0;
      this.tooLong = false;
      if (wasDown) this.endedAt = now;
      this.onChange?.(change);
      if (wasDown) this.changed();
    }
  }

  /**
   * A connection to `origin` failed with a no-route error (noRouteError). True when that is the
   * worker's outage: the failure must not count against the site.
   */
  noRoute(origin: string): boolean {
    const now = this.now();
    if (this.lastAnswerAt === undefined) return false; // no answer ever: nothing to tell an outage by
    if (this.unreachable.size < MAX_TRACKED) this.unreachable.add(origin);
    if (this.downSince === undefined) {
      const quiet = now - this.lastAnswerAt;
      if (this.unreachable.size < this.minOrigins || quiet < this.quietMs) return false;
      this.downSince = now;
      this.onChange?.({ kind: 'down', origins: this.unreachable.size, quietMs: quiet });
      this.changed();
    }
    if (this.tooLong) return false;
    if (now - this.downSince > this.maxHoldMs) {
      this.tooLong = true;
      this.endedAt = now;
      this.onChange?.({ kind: 'too-long', downMs: now - this.downSince, notCounted: this.notCounted });
      this.changed();
      return false;
    }
    this.notCounted += 1;
    this.notCountedTotal += 1;
    return true;
  }

  /** The worker's network is taken to be down now. */
  get down(): boolean {
    return this.downSince !== undefined && !this.tooLong;
  }

  wasDownSince(fromMs: number): boolean {
    return this.down || (this.endedAt !== undefined && this.endedAt >= fromMs);
  }

  listen(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private changed(): void {
    for (const fn of this.listeners) fn();
  }
}
