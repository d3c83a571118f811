/**
 * Adaptive rate: multiplicative decrease on 429/503 and on rising latency, a hold for the
 * Retry-After the site gave us, then an additive ramp back towards the target (never above it).
 */

export interface AdaptiveConfig {
  /** The rate never drops below min(floor, target). */
  floorRate: number;
  /** Seconds a ramp from zero to the target would take (additive increase). */
  rampSeconds: number;
  /** Longest Retry-After we honour; a site asking for a day gets this instead. */
  maxRetryAfterMs: number;
  /** Hold after a 429/503 without a usable Retry-After. */
  defaultHoldMs: number;
  /** Several throttles inside this interval halve the rate once. */
  decreaseCooldownMs: number;
  latencyDecreaseFactor: number;
}

export const DEFAULT_ADAPTIVE: AdaptiveConfig = {
  floorRate: 0.1,
  rampSeconds: 180,
  maxRetryAfterMs: 15 * 60_000,
  defaultHoldMs: 5_000,
  decreaseCooldownMs: 2_000,
  latencyDecreaseFactor: 0.75,
};

/** The longest cap an operator may give the Retry-After honoured (`--max-retry-after`): a day. */
export const MAX_RETRY_AFTER_LIMIT_S = 86_400;

export function invalidRetryAfterCap(seconds: number): string | undefined {
  if (!Number.isFinite(seconds) || seconds < 1 || seconds > MAX_RETRY_AFTER_LIMIT_S) return `the longest Retry-After must be a number of seconds from 1 to ${MAX_RETRY_AFTER_LIMIT_S}`;
  return undefined;
}

/**
 * A new cap on the Retry-After honoured. A Retry-After (or spent quota) hold that would outlast the new cap
 * counted from now ends then instead; a longer cap lengthens no hold already decided.
 */
export function capRetryAfter(state: AdaptiveState, maxRetryAfterMs: number, nowMs: number): boolean {
  const until = nowMs + maxRetryAfterMs;
  // A spent quota's wait is capped as a Retry-After is: both are the site's word on when to come back.
  const reason = state.holdReason ?? 'retry-after';
  if ((reason !== 'retry-after' && reason !== 'quota') || state.holdUntilMs <= until) return false;
  state.holdUntilMs = until;
  state.lastRampMs = Math.min(state.lastRampMs, until);
  return true;
}

export type HoldReason = 'retry-after' | 'crawl-delay' | 'robots' | 'store' | 'quota';

export interface AdaptiveState {
  rate: number;
  /**
   * No grant before this time (epoch ms): a Retry-After window, the wait a robots.txt Crawl-delay
   * asks for, until an unreadable robots.txt is asked for again, or a wait after the store failed.
   */
  holdUntilMs: number;
  /**
   * What set the hold's end, for operators ("Retry-After until" would be wrong for a
   * Crawl-delay). Absent in states saved before it existed: read as a Retry-After.
   */
  holdReason?: HoldReason;
  lastDecreaseMs: number;
  lastRampMs: number;
}

export function newAdaptiveState(target: number, nowMs: number): AdaptiveState {
  return { rate: target, holdUntilMs: 0, lastDecreaseMs: -Infinity, lastRampMs: nowMs };
}

function floorFor(target: number, cfg: AdaptiveConfig): number {
  return Math.min(cfg.floorRate, target);
}

function decrease(state: AdaptiveState, target: number, factor: number, nowMs: number, cfg: AdaptiveConfig): boolean {
  if (nowMs - state.lastDecreaseMs < cfg.decreaseCooldownMs) return false;
  state.rate = Math.max(floorFor(target, cfg), state.rate * factor);
  state.lastDecreaseMs = nowMs;
  state.lastRampMs = nowMs;
  return true;
}

/** A 429 or 503: halve at once (once per cooldown) and hold for the Retry-After. */
export function onThrottle(state: AdaptiveState, target: number, nowMs: number, retryAfterMs: number | undefined, cfg: AdaptiveConfig = DEFAULT_ADAPTIVE): void {
  decrease(state, target, 0.5, nowMs, cfg);
  const hold = Math.min(cfg.maxRetryAfterMs, retryAfterMs ?? cfg.defaultHoldMs);
  holdUntil(state, nowMs + hold, 'retry-after');
  state.lastRampMs = Math.max(state.lastRampMs, state.holdUntilMs);
}

export function onLatencyElevated(state: AdaptiveState, target: number, nowMs: number, cfg: AdaptiveConfig = DEFAULT_ADAPTIVE): boolean {
  return decrease(state, target, cfg.latencyDecreaseFactor, nowMs, cfg);
}

/** Reduce to a share of the current rate, e.g. after a temporary halt. */
export function reduceTo(state: AdaptiveState, target: number, share: number, nowMs: number, cfg: AdaptiveConfig = DEFAULT_ADAPTIVE): void {
  state.rate = Math.max(floorFor(target, cfg), state.rate * share);
  state.lastRampMs = nowMs;
}

/** Additive increase for the time since the last ramp, outside any hold. */
export function ramp(state: AdaptiveState, target: number, nowMs: number, cfg: AdaptiveConfig = DEFAULT_ADAPTIVE): void {
  if (nowMs < state.holdUntilMs) return;
  const from = Math.max(state.lastRampMs, state.holdUntilMs);
  const elapsedS = Math.max(0, nowMs - from) / 1000;
  state.lastRampMs = nowMs;
  if (state.rate >= target) {
    state.rate = target;
    return;
  }
  state.rate = Math.min(target, state.rate + (target / cfg.rampSeconds) * elapsedS);
}

/** Holds until `untilMs` unless a hold already lasts longer; the later hold's reason is the one shown. */
export function holdUntil(state: AdaptiveState, untilMs: number, reason: HoldReason): void {
  if (untilMs <= state.holdUntilMs) return;
  state.holdUntilMs = untilMs;
  state.holdReason = reason;
}

export function isHeld(state: AdaptiveState, nowMs: number): boolean {
  return nowMs < state.holdUntilMs;
}
