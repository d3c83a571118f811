/**
 * Whether this worker's clock agrees with the Temporal server's. Grant windows are planned on
 * the workflow's (the server's) clock and kept on the worker's: a worker whose clock is s seconds
 * behind sends a window's requests s seconds late, into the next window, which another worker
 * may be sending then, so the site sees up to twice the rate for s seconds; one ahead, into the
 * window before. NTP keeps clocks within milliseconds; a machine without it drifts by seconds a
 * day, and nothing else would say so.
 *
 * Each fetch activity's start gives a sample: the worker's time when it starts less the server's
 * time when it scheduled it. That is the skew plus the time the task took to reach the worker,
 * which is never negative and, for some tasks, nearly nothing: the smallest recent sample is
 * the skew, or a little above it.
 */

/** Behind by more than this (a sample this far below zero is the clock, not a trip) is said. */
export const SKEW_BEHIND_MS = 250;
/** Ahead: every recent task having taken this long to arrive is unlikely on a worker with room. */
export const SKEW_AHEAD_MS = 2_000;
const SAMPLES = 64;
/** Fewer samples than this say too little of the trips for "ahead". */
const AHEAD_SAMPLES = 32;
const WARN_EVERY_MS = 10 * 60_000;

export class ClockSkewWatch {
  private readonly samples: number[] = [];
  private lastWarnMs = -Infinity;

  /**
   * Takes one sample (worker now less server scheduled time, ms) and returns a warning when the
   * recent ones show a skew worth saying, at most every ten minutes.
   */
  sample(diffMs: number, nowMs: number): { skewMs: number; note: string } | undefined {
    if (!Number.isFinite(diffMs)) return undefined;
    this.samples.push(diffMs);
    if (this.samples.length > SAMPLES) this.samples.shift();
    const least = Math.min(...this.samples);
    const behind = least < -SKEW_BEHIND_MS;
    const ahead = this.samples.length >= AHEAD_SAMPLES && least > SKEW_AHEAD_MS;
    if (!behind && !ahead || nowMs - this.lastWarnMs < WARN_EVERY_MS) return undefined;
    this.lastWarnMs = nowMs;
    const seconds = (Math.abs(least) / 1000).toFixed(1);
    const note = behind
      ? `this worker's clock is at least ${seconds} s behind the Temporal server's: it sends each grant's requests that much late, into the next grant's window, where another worker may be sending too (the site could see up to twice its rate); set its clock right (NTP: timedatectl, chrony)`
      : `this worker's clock looks ${seconds} s ahead of the Temporal server's (or each of its last ${this.samples.length} activities took that long to reach it): it would send each grant's requests that much early, into the window before; check its clock (NTP: timedatectl, chrony)`;
    return { skewMs: least, note };
  }
}
