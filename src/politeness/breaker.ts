/**
 * The circuit breaker's windows: error share over the last 60 s (temporary halt) and the last
 * 50 request outcomes (permanent halt). Kept as per-second buckets and a short string so the
 * state stays small in workflow history and across continue-as-new.
 */

export interface BreakerConfig {
  windowMs: number;
  /** Halt temporarily when errors / requests in the window reach this share... */
  errorShare: number;
  /** ...with at least this many requests in the window. */
  minSamples: number;
  coolDownMs: number;
  /** Halt permanently when this many consecutive requests failed. */
  consecutiveForHalt: number;
}

export const DEFAULT_BREAKER: BreakerConfig = {
  windowMs: 60_000,
  errorShare: 0.1,
  minSamples: 20,
  coolDownMs: 60_000,
  consecutiveForHalt: 50,
};

export interface BreakerBucket {
  /** Start of the second, epoch ms. */
  atMs: number;
  requests: number;
  errors: number;
}

export interface BreakerState {
  buckets: BreakerBucket[];
  /** Failed requests in a row, repeats (recordRepeat) included. */
  consecutiveErrors: number;
  /** Of those, first failures of their URLs; absent in a state from before repeats were told apart (all were then). */
  freshInRun?: number;
  /** The last 50 outcomes, oldest first: 'e' error, 'o' ok. */
  last: string;
}

export function newBreakerState(): BreakerState {
  return { buckets: [], consecutiveErrors: 0, last: '' };
}

export function prune(state: BreakerState, nowMs: number, cfg: BreakerConfig = DEFAULT_BREAKER): void {
  const oldest = nowMs - cfg.windowMs;
  while (state.buckets.length > 0 && state.buckets[0]!.atMs + 1000 <= oldest) state.buckets.shift();
}

export function recordSample(state: BreakerState, atMs: number, isError: boolean, cfg: BreakerConfig = DEFAULT_BREAKER): void {
  const second = Math.floor(atMs / 1000) * 1000;
  let bucket = state.buckets[state.buckets.length - 1];
  if (!bucket || bucket.atMs < second) {
    bucket = { atMs: second, requests: 0, errors: 0 };
    state.buckets.push(bucket);
  } else if (bucket.atMs > second) {
    // Reports can arrive slightly out of order; fold an older sample into its own second.
    bucket = state.buckets.find((b) => b.atMs === second) ?? bucket;
  }
  bucket.requests += 1;
  if (isError) bucket.errors += 1;
  prune(state, atMs, cfg);
  state.freshInRun = isError ? freshInRun(state) + 1 : 0;
  state.consecutiveErrors = isError ? state.consecutiveErrors + 1 : 0;
  state.last = (state.last + (isError ? 'e' : 'o')).slice(-cfg.consecutiveForHalt);
}

/**
 * A URL failing again (a broken image at its second and third try): no sample in the share's
 * window, but it continues a run of failures, as the site has answered nothing good since.
 */
export function recordRepeat(state: BreakerState, cfg: BreakerConfig = DEFAULT_BREAKER): void {
  state.freshInRun = freshInRun(state);
  state.consecutiveErrors += 1;
  state.last = (state.last + 'e').slice(-cfg.consecutiveForHalt);
}

function freshInRun(state: BreakerState): number {
  return state.freshInRun ?? state.consecutiveErrors;
}

/**
 * A run of failures halts for good only if this many of them were URLs failing for the first
 * time. A chunk ends with its broken images' retries, one after another: a healthy site with
 * 25 broken images in a chunk of 500 made 50 failures in a row of them alone.
 */
export const FRESH_FAILURES_FOR_HALT = 10;

/** After an operator's resume: the run is over. */
export function clearRun(state: BreakerState): void {
  state.consecutiveErrors = 0;
  state.freshInRun = 0;
}

/** Requests and errors in the window ending at nowMs. Reads only: safe in a query handler. */
export function windowCounts(state: BreakerState, nowMs: number, cfg: BreakerConfig = DEFAULT_BREAKER): { requests: number; errors: number } {
  const oldest = nowMs - cfg.windowMs;
  let requests = 0;
  let errors = 0;
  for (const b of state.buckets) {
    if (b.atMs + 1000 <= oldest) continue;
    requests += b.requests;
    errors += b.errors;
  }
  return { requests, errors };
}

export function shouldCoolDown(state: BreakerState, nowMs: number, cfg: BreakerConfig = DEFAULT_BREAKER): boolean {
  const { requests, errors } = windowCounts(state, nowMs, cfg);
  return requests >= cfg.minSamples && errors / requests >= cfg.errorShare - 1e-9;
}

export function shouldHalt(state: BreakerState, cfg: BreakerConfig = DEFAULT_BREAKER): boolean {
  return state.consecutiveErrors >= cfg.consecutiveForHalt && freshInRun(state) >= Math.min(FRESH_FAILURES_FOR_HALT, cfg.consecutiveForHalt);
}

/** After a halt the old window must not trip the breaker again the moment granting resumes. */
export function clearWindow(state: BreakerState): void {
  state.buckets = [];
}
