/**
 * How far ahead of now a grant's window starts. A grant travels monitor -> batch workflow ->
 * fetch activity before its first request can leave; slots that pass on the way are lost (the
 * activity moves its slots later by its lateness, and those pushed past the window's end go back
 * unused). On an idle worker that trip takes ~0.1 s and a fixed lead of 300 ms covers it. On a
 * worker saturated by orchestration (1,000 small sources on 2 cores: workflow tasks waited 2-4 s
 * in the queue) it took 4 s, so a batch of 3 URLs with a 5 s window used one slot per grant and
 * needed four grants: four times the history events and server work on a machine already short
 * of CPU, which made the queue longer still.
 *
 * The fetch activity reports how long its grant took to reach it (`dispatchMs`, first attempt
 * only); the monitor keeps a learnt value that follows slower trips quickly but not at once
 * (at most doubling plus a second per trip: one 66 s trip, as when a batch's first grant met a
 * queue of 2,000 new workflows, would otherwise have idled the source for the 15 s maximum
 * before each of its next grants), and comes down by a share of the difference with each
 * faster one.
 */

/** Never lead by more than this: a longer trip means the worker is down, and its slots are lost anyway. */
export const MAX_LEAD_MS = 15_000;
/** Weight of a faster trip in the learnt value. */
const DECAY = 0.3;
/** A slower trip raises the learnt value to at most twice itself plus this. */
const STEP_MS = 1_000;
/** Added to the learnt trip: the next one varies. */
const MARGIN = 1.25;

/** The learnt dispatch time after one more observed trip. */
export function learnDispatch(previous: number | undefined, observedMs: number): number {
  const sample = Math.min(MAX_LEAD_MS, Math.max(0, observedMs));
  const prev = previous ?? 0;
  if (sample >= prev) return Math.min(sample, 2 * prev + STEP_MS);
  return prev + DECAY * (sample - prev);
}

/** The lead for the next window: the configured one, or the learnt trip with a margin when longer. */
export function grantLeadMs(configuredMs: number, learntDispatchMs: number | undefined): number {
  if (learntDispatchMs === undefined) return configuredMs;
  return Math.min(MAX_LEAD_MS, Math.max(configuredMs, learntDispatchMs * MARGIN));
}
