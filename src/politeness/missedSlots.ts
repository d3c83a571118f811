import { MAX_LEAD_MS } from './grantLead';

/**
 * Slots a busy worker misses: a request that cannot leave within its slot's bound, a URL
 * waiting for image work, late wake-ups that moved a grant's last slots past its end. Its URL
 * waits for a later grant: one more round trip through the monitor, history events and a gap
 * of a grant's lead time. When the worker has been missing slots, a batch's last window of work
 * gets that many more slots, spaced as always, so it can finish inside the window instead of
 * asking again; two spare slots at least, since a source's first grant has no history to go by.
 * Spare slots only lengthen the batch's own last window: spacing, and so the site's load, is
 * unchanged.
 *
 * A worker that cannot keep up with a source's rate (its CPU is the limit: measured, 58% of
 * slots missed with 4 sources offering 240 requests/s to a 2-core worker doing 80 images/s)
 * serves only part of each window and hands the rest back. Windows then grow by the same factor
 * (a window is filled with URLs, so the site's load per second is unchanged), so each grant
 * serves about as many URLs as a window was meant to, with fewer round trips through the monitor
 * (history events and server CPU, on the machine that is already short of CPU).
 */

/**
 * A source's last grant (one batch wants slots and no chunk waits to become a batch) has nothing
 * after it on the timeline, so slots kept spare at its end cost nothing, while a grant whose
 * activity starts after its last slot serves nothing at all: its URLs wait for a report, a new
 * grant and that grant's trip (measured with 200 sources at 1 req/s on a saturated 2-core worker:
 * tail grants of 1-2 URLs reached their activity 2.4-4.6 s late, with a learnt lead of 1.1-1.8 s,
 * and each such source lost 15-24 s). Its spare slots cover a start this much late at least,
 * or twice the lead when that is longer.
 */
export const TAIL_SLACK_MS = 5_000;

/** Weight of the newest report in the running miss rate. */
const WEIGHT = 0.3;
/** Never more than triple a batch's slots (or a window's length) for misses. */
const MAX_MISS_RATE = 2 / 3;
/**
 * Spare slots with no miss history (a source's first grant). A spare slot that is not needed
 * costs the source one interval of its timeline; a batch that runs out of slots costs a round
 * trip through the monitor and a grant's lead (2-9 s measured with 200 sources at 1 req/s,
 * where busy sources missed 2-4 slots of 25).
 */
const MIN_SPARE = 2;

/** Slots for `wanted` URLs in a source's last grant: spares enough for a late start (TAIL_SLACK_MS). */
export function tailGrantSlots(wanted: number, intervalMs: number, leadMs: number): number {
  if (wanted <= 0) return 0;
  const slackMs = Math.min(MAX_LEAD_MS, Math.max(TAIL_SLACK_MS, 2 * leadMs));
  return wanted + Math.max(MIN_SPARE, Math.ceil(slackMs / intervalMs));
}

/** The running share of slots missed, updated with one report. */
export function updateMissRate(previous: number, missed: number, dispatched: number): number {
  const passed = missed + dispatched;
  if (passed <= 0) return previous;
  return (1 - WEIGHT) * previous + WEIGHT * (missed / passed);
}

/** How many times its usual length a window is when a share `missRate` of slots is missed. */
export function windowStretch(missRate: number): number {
  return 1 / (1 - Math.min(MAX_MISS_RATE, Math.max(0, missRate)));
}

/** Slots to plan for `wanted` URLs when a share `missRate` of slots is being missed. */
export function slotsWithMissAllowance(wanted: number, missRate: number): number {
  if (wanted <= 0) return 0;
  const m = Math.min(MAX_MISS_RATE, Math.max(0, missRate));
  return wanted + Math.max(MIN_SPARE, Math.ceil((wanted * m) / (1 - m)));
}

/**
 * A share of a source's recent slots this high passed unsent: its crawl runs at about the rest
 * of its rate. Below it the miss allowance above keeps up (300 sources at 0.1 req/s missing 13%
 * still got 0.96 of their rate); the demo's sources miss 0-2%.
 */
export const BEHIND_MISS_RATE = 0.3;

/**
 * What to tell operators of a source that misses that many slots: the workers, not the site,
 * set its pace. Nothing fails and nothing is logged as an error, so without this only a
 * climbing missed-slot count showed it (2,000 slow sources on a 2-core worker made 157 requests
 * in 11 minutes).
 */
export function workersBehindNote(rate: number, missRate: number | undefined): string | undefined {
  if (missRate === undefined || missRate < BEHIND_MISS_RATE) return undefined;
  const gets = Math.round(rate * (1 - missRate) * 100) / 100;
  return `workers behind: ${Math.round(missRate * 100)}% of its recent slots passed unsent, so it gets about ${gets}/s of its ${rate}/s ` +
    '(a busy worker CPU, or fetch activities starting late): add workers (crawl worker), or lower rates';
}
