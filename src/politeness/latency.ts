/**
 * Latency watch: a slow-moving baseline of time to first byte and a short window of recent
 * samples. When the recent median rises well above the baseline the source is struggling, and
 * we slow down before it starts returning errors.
 */

export interface LatencyState {
  baselineMs: number | null;
  baselineSamples: number;
  recent: number[];
}

export interface LatencyConfig {
  recentSize: number;
  minSamples: number;
  /** Recent median above factor x baseline counts as elevated... */
  factor: number;
  /** ...and only when it is also this many ms above it (tiny latencies are noisy). */
  minExcessMs: number;
  baselineAlpha: number;
}

export const DEFAULT_LATENCY: LatencyConfig = { recentSize: 21, minSamples: 10, factor: 2, minExcessMs: 50, baselineAlpha: 0.05 };

export function newLatencyState(): LatencyState {
  return { baselineMs: null, baselineSamples: 0, recent: [] };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function recordTtfb(state: LatencyState, ttfbMs: number, cfg: LatencyConfig = DEFAULT_LATENCY): void {
  state.recent.push(ttfbMs);
  if (state.recent.length > cfg.recentSize) state.recent.shift();
  if (state.baselineMs === null || state.baselineSamples < cfg.minSamples) {
    // Plain mean until the baseline has enough samples to be trusted.
    const n = state.baselineSamples;
    state.baselineMs = ((state.baselineMs ?? 0) * n + ttfbMs) / (n + 1);
    state.baselineSamples = n + 1;
    return;
  }
  // The baseline learns only from normal samples so that a slow period cannot raise it.
  if (ttfbMs <= cfg.factor * state.baselineMs) {
    state.baselineMs += cfg.baselineAlpha * (ttfbMs - state.baselineMs);
    state.baselineSamples += 1;
  }
}

export function latencyElevated(state: LatencyState, cfg: LatencyConfig = DEFAULT_LATENCY): boolean {
  if (state.baselineMs === null || state.baselineSamples < cfg.minSamples || state.recent.length < cfg.minSamples) return false;
  const m = median(state.recent);
  return m > cfg.factor * state.baselineMs && m - state.baselineMs >= cfg.minExcessMs;
}

/** After acting on elevated latency, start a fresh recent window so one episode acts once. */
export function resetRecent(state: LatencyState): void {
  state.recent = [];
}
