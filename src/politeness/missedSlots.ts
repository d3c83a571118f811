/**
 * Slots a busy worker misses. A slot the worker is too late for passes without a request (a
 * late request would crowd the next one at the site), so its URL waits for a later grant:
 * one more round trip through the monitor, history events and a gap of a grant's lead time.
 * When the worker has been missing slots, a batch's last window of work gets that many more
 * slots, spaced as always, so it can finish inside the window instead of asking again; two
 * spare slots at least, since a source's first grant has no history to go by. Spare slots
 * only lengthen the batch's own last window: spacing, and so the site's load, is unchanged.
 */

/** Weight of the newest report in the running miss rate. */
const WEIGHT = 0.3;
/** Never more than double a batch's slots for misses. */
const MAX_MISS_RATE = 0.5;
/**
 * Spare slots with no miss history (a source's first grant). A spare slot that is not needed
 * costs the source one interval of its timeline; a batch that runs out of slots costs a round
 * trip through the monitor and a grant's lead (2-9 s measured with 200 sources at 1 req/s,
 * where busy sources missed 2-4 slots of 25).
 */
const MIN_SPARE = 2;

/** The running share of slots missed, updated with one report. */
export function updateMissRate(previous: number, missed: number, dispatched: number): number {
  const passed = missed + dispatched;
  if (passed <= 0) return previous;
  return (1 - WEIGHT) * previous + WEIGHT * (missed / passed);
}

/** Slots to plan for `wanted` URLs when a share `missRate` of slots is being missed. */
export function slotsWithMissAllowance(wanted: number, missRate: number): number {
  if (wanted <= 0) return 0;
  const m = Math.min(MAX_MISS_RATE, Math.max(0, missRate));
  return wanted + Math.max(MIN_SPARE, Math.ceil((wanted * m) / (1 - m)));
}
