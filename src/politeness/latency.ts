/**
 * Latency watch: a slow-moving baseline of time to first byte and a short window of recent
 * samples. When the recent median rises well above the baseline the source is struggling, and
 * we slow down before it starts returning errors.
 *
 * The baseline moves by time, not by sample (learnBaseline): it goes halfway towards the recent
 * median in `baselineHalfLifeMs`, whatever the rate. It used to move 5% towards every sample
 * below twice itself, which at 5 req/s is a time constant of 4 s: a site whose TTFB climbed from
 * 70 ms to 3 s over 150 requests as we crawled it (a queue building up, the overload this watch
 * is for) dragged the baseline along and was never slowed for; and one whose TTFB stepped up and
 * stayed there was never learnt again, its rate held down for as long as the crawl lasted.
 */

export interface LatencyState {
  baselineMs: number | null;
  baselineSamples: number;
  recent: number[];
  /** When learnBaseline last ran (the monitor's clock, epoch ms); unset before its first report. */
  learntAtMs?: number;
}

export interface LatencyConfig {
  recentSize: number;
  minSamples: number;
  /** Recent median above factor x baseline counts as elevated... */
  factor: number;
  /** ...and only when it is also this many ms above it (tiny latencies are noisy). */
  minExcessMs: number;
  /** Per-sample weight of the baseline's old rule (monitors from before learnBaseline replay with it). */
  baselineAlpha: number;
  /** The baseline covers half the distance to the recent median in this long. */
  baselineHalfLifeMs: number;
  /** The first baseline is the least of the first samples instead of their mean. */
  firstBaselineLeast?: boolean;
}

export const DEFAULT_LATENCY: LatencyConfig = { recentSize: 21, minSamples: 10, factor: 2, minExcessMs: 50, baselineAlpha: 0.05, baselineHalfLifeMs: 5 * 60_000 };

/**
 * The download-speed watch: the same rule over each large image's transfer time per MiB. A site
 * whose uplink is its bottleneck answers the first byte at once (a flow-fair queue lets a new
 * connection's first packets through) while every download slows with each one added: measured
 * with a loopback site of 1 MB/s crawled at 5/s, the TTFB watch held the rate near 2.5/s and 64
 * downloads stayed open at the site for the whole crawl, its link ours alone, each download 31 s
 * instead of half a second. A slower transfer alone is no overload: the median must be three
 * times the baseline and at least a second per MiB (below 1 MiB/s) more, so that a worker whose
 * busy CPU reads bodies late (a turn of its event loop) is not taken for a site's slowness. The
 * first baseline is the fastest of the first downloads: at 5/s the first ten already shared the
 * link (27 open after 10 s), and their mean, 56 KiB/s, was a queue's speed, not the site's.
 */
export const DEFAULT_TRANSFER: LatencyConfig = { ...DEFAULT_LATENCY, factor: 3, minExcessMs: 1_000, firstBaselineLeast: true };

/** Bodies smaller than this say little of a link's speed (their transfer is a round trip or two). */
export const TRANSFER_SAMPLE_MIN_BYTES = 256 * 1024;

/** A body's transfer time per MiB, when it is large enough to tell (undefined otherwise). */
export function transferMsPerMib(bytes: number, ttfbMs: number | undefined, totalMs: number | undefined): number | undefined {
  if (bytes < TRANSFER_SAMPLE_MIN_BYTES || ttfbMs === undefined || totalMs === undefined) return undefined;
  return Math.round((Math.max(0, totalMs - ttfbMs) * 1024 * 1024) / bytes);
}

export function newLatencyState(): LatencyState {
  return { baselineMs: null, baselineSamples: 0, recent: [] };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** `bySample`: the old rule, for monitors whose history was made with it; else the baseline learns in learnBaseline. */
export function recordTtfb(state: LatencyState, ttfbMs: number, cfg: LatencyConfig = DEFAULT_LATENCY, bySample = false): void {
  state.recent.push(ttfbMs);
  if (state.recent.length > cfg.recentSize) state.recent.shift();
  if (state.baselineMs === null || state.baselineSamples < cfg.minSamples) {
    // Plain mean (or the least) until the baseline has enough samples to be trusted.
    const n = state.baselineSamples;
    state.baselineMs = cfg.firstBaselineLeast ? Math.min(state.baselineMs ?? Infinity, ttfbMs) : ((state.baselineMs ?? 0) * n + ttfbMs) / (n + 1);
    state.baselineSamples = n + 1;
    return;
  }
  if (!bySample) return;
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

/**
 * A report's share of the baseline's learning counts at most this much time: a source paused or
 * held for an hour has learnt nothing meanwhile, and its first samples after it must not become
 * its baseline at once. Reports come once per window (10-60 s).
 */
const MAX_LEARN_STEP_MS = 60_000;

/**
 * Moves a trusted baseline towards the recent median by the time since it last did: slowly
 * enough that a rise within minutes stands out against it, and all the way in the end, so that a
 * site that has become slower for good is crawled at its new normal (after its slowdowns, the rate
 * ramps back) rather than held down for the rest of the crawl. Once per report: after
 * latencyElevated has judged its samples, before a slowdown clears them (resetRecent).
 */
export function learnBaseline(state: LatencyState, nowMs: number, cfg: LatencyConfig = DEFAULT_LATENCY): void {
  if (state.learntAtMs === undefined) state.learntAtMs = nowMs;
  // Too few samples to judge by (a slow source's report, or the first after a slowdown cleared
  // them): the time counts, up to the cap, at the next report.
  if (state.baselineMs === null || state.baselineSamples < cfg.minSamples || state.recent.length < cfg.minSamples) return;
  const elapsed = Math.min(MAX_LEARN_STEP_MS, Math.max(0, nowMs - state.learntAtMs));
  state.learntAtMs = nowMs;
  const share = 1 - 0.5 ** (elapsed / cfg.baselineHalfLifeMs);
  state.baselineMs += share * (median(state.recent) - state.baselineMs);
}
