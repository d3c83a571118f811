import type { Grant } from '../shared/types';

/**
 * Grant windows. Requests to a source are paced on one global timeline of slots spaced
 * 1000/rate ms apart. Each grant owns a contiguous, disjoint stretch of that timeline, so two
 * batches (possibly on two machines) can never send inside each other's stretch, and a batch
 * never sends after its stretch ends: a grant is valid only for its window. Burst slots, when
 * configured and earned by idle time, may go at the start of a window without spacing.
 */

export interface PacerState {
  /** End of the last granted stretch (epoch ms); the next stretch starts no earlier. */
  nextFreeMs: number;
  /** Burst slots earned by idle time, at most the configured burst. */
  burstCredit: number;
  /** Rotates which batch gets the remainder slot, for fairness. */
  rotation: number;
}

export function newPacerState(): PacerState {
  return { nextFreeMs: 0, burstCredit: 0, rotation: 0 };
}

export interface WindowParams {
  nowMs: number;
  rate: number;
  burst: number;
  /** How far ahead of now a window starts, so the batch can start its activity in time. */
  leadMs: number;
  /** Target window length; the planner grants whole slots. */
  windowMs: number;
}

export interface Want {
  batchId: string;
  wanted: number;
}

export type PlannedGrant = Omit<Grant, 'grantId'>;

/**
 * Window length from the rate: about 40 slots, between 10 s and a minute. A grant costs ~25
 * history events and a report comes back once per window, so the floor trades the monitor's
 * view of a fast source (how soon rising latency lowers its rate) against orchestration cost:
 * 4 s windows cost 0.72 events per image on the 4-source bench, 10 s windows 0.39. A 429, 503 or
 * burst of errors does not wait for the window's end: the activity stops sending at once.
 */
export function windowLengthMs(rate: number): number {
  const forFortySlots = (40 / rate) * 1000;
  return Math.min(60_000, Math.max(10_000, forFortySlots));
}

/**
 * A source's first window is at most this long, whatever its rate: its first report (latency,
 * errors, progress) reaches the monitor and the operator after ~10 s, not after the 40-60 s of a
 * slow source's usual window. One more grant per source, only for sources below 4 req/s with
 * more URLs than the first window holds.
 */
export const FIRST_WINDOW_MS = 10_000;

/**
 * A window whose report is wanted as soon as it can come: one that may lift a Crawl-delay cap
 * (MonitorModel.planGrants). At a 1/s cap, 10 s windows (one more planned before the first's
 * report came) kept a source's other host at 1/s for 19 s after the delayed host was done.
 */
export const PROBE_WINDOW_MS = 3_000;

/**
 * Hands `total` slots to the wants in rotating order, filling one batch before the next. Over
 * successive windows every batch gets its turn (fair), while each window makes as few grants as
 * possible: every grant costs history events in the monitor and the batch.
 */
export function fairShares(wants: readonly Want[], total: number, rotation: number): number[] {
  const shares = wants.map(() => 0);
  let left = total;
  const n = wants.length;
  for (let k = 0; k < n && left > 0; k++) {
    const i = (rotation + k) % n;
    const give = Math.min(left, Math.max(0, wants[i]!.wanted));
    shares[i] = give;
    left -= give;
  }
  return shares;
}

export function planWindow(state: PacerState, p: WindowParams, wants: readonly Want[]): PlannedGrant[] {
  const intervalMs = 1000 / p.rate;
  const startMs = Math.max(p.nowMs + p.leadMs, state.nextFreeMs);
  // Idle time since the last stretch earns burst slots back, one per interval.
  if (state.nextFreeMs > 0) {
    state.burstCredit = Math.min(p.burst, state.burstCredit + Math.floor((startMs - state.nextFreeMs) / intervalMs));
  } else {
    state.burstCredit = p.burst;
  }
  const capacity = Math.max(1, Math.floor(p.windowMs / intervalMs));
  const totalWanted = wants.reduce((s, w) => s + Math.max(0, w.wanted), 0);
  if (totalWanted === 0) return [];
  const burstUsable = Math.min(state.burstCredit, Math.max(0, totalWanted - 1));
  const spaced = Math.min(capacity, totalWanted - burstUsable);
  const shares = fairShares(wants, spaced + burstUsable, state.rotation);
  state.rotation += 1;

  const grants: PlannedGrant[] = [];
  let offset = 0;
  let burstLeft = burstUsable;
  wants.forEach((w, i) => {
    const slots = shares[i]!;
    if (slots === 0) return;
    const burstSlots = Math.min(burstLeft, slots - 1);
    burstLeft -= burstSlots;
    const spacedSlots = slots - burstSlots;
    const grantStart = startMs + offset * intervalMs;
    grants.push({
      batchId: w.batchId,
      startMs: grantStart,
      endMs: grantStart + spacedSlots * intervalMs,
      intervalMs,
      slots,
      burstSlots,
    });
    offset += spacedSlots;
  });
  state.burstCredit -= burstUsable - burstLeft;
  state.nextFreeMs = startMs + offset * intervalMs;
  return grants;
}

/** Earliest send time of request j (0-based) under a grant's schedule. */
export function slotTime(g: { startMs: number; intervalMs: number; burstSlots: number }, j: number): number {
  return g.startMs + Math.max(0, j - g.burstSlots) * g.intervalMs;
}

/** The largest number of times that fall inside any half-open window [t, t + windowMs). */
export function maxInAnyWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    // The nanosecond tolerance keeps float rounding of slot times from inventing an overlap.
    while (sorted[hi]! - sorted[lo]! >= windowMs - 1e-6) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

/** The contract's ceilings: ceil(rate) + burst per second, 10 x rate + burst per 10 s. */
export function ceilings(rate: number, burst: number): { perSecond: number; perTenSeconds: number } {
  return { perSecond: Math.ceil(rate) + burst, perTenSeconds: Math.floor(10 * rate) + burst };
}

/**
 * A report has this long to come back from a window's last slot before the next window must be
 * planned: the longest lead (grantLead.ts MAX_LEAD_MS) and a few seconds for the trip back.
 */
const REPORT_ROOM_MS = 20_000;

/**
 * How much later a window whose slots are `intervalMs` apart may slide (Grant.floatMs), or 0.
 * A slow source (a Crawl-delay of 30 s, a catalogue rate of one a minute) gets one slot per
 * window, granted on its own trip monitor -> batch -> activity; a trip longer than the lead lost
 * the whole window, and the next one was a full interval away: 500 sources at 0.01 req/s on a
 * 2-core machine sent 294 requests in 5 minutes instead of ~1,500 (1,206 of 1,519 slots missed).
 * Floating is free where the activity reports its last send before the next window is planned
 * (the window after it then opens one spacing after that send: reclaimWindowTail), so only
 * windows whose slots are more than REPORT_ROOM_MS apart float, by up to half the spacing: a
 * report that never comes costs the source at most that.
 */
export function slowWindowFloatMs(intervalMs: number): number {
  return Math.max(0, Math.min(intervalMs / 2, intervalMs - REPORT_ROOM_MS));
}

/**
 * How much later a grant may slide when its window holds one or two slots (Grant.floatMs), or 0:
 * a source's short first window (FIRST_WINDOW_MS) at 0.1-0.2 req/s. An activity that starts
 * after a slot moves the window's slots later: the last falls out of it, which for a window of one
 * slot is the whole window. Measured: a source at 0.1 req/s whose monitor's first workflow task
 * took 311 ms on a fresh worker (its lead: 300 ms) started its activity 12 ms after its only
 * slot, sent nothing for 10 s, and showed "workers behind" for 45 s. Such a window's report comes
 * back a spacing or more before the next window is planned, so the float is reclaimed
 * (reclaimWindowTail) and costs nothing; half a spacing once if the report never comes. In a
 * longer window a late start costs one slot, and a float would cost about the lead each time.
 */
export function shortGrantFloatMs(slots: number, intervalMs: number): number {
  return slots <= 2 ? intervalMs / 2 : 0;
}

/**
 * A grant that may float (Grant.floatMs), moved so that its first slot is no sooner than
 * `leadMs` after `nowMs`: by at most its float, which shrinks by the move. Its window plus what
 * is left of its float end where the monitor's booking ends, so the next window is as far away.
 */
export function floatGrant<G extends { startMs: number; endMs: number; floatMs?: number }>(g: G, nowMs: number, leadMs: number): G {
  const float = g.floatMs ?? 0;
  const shift = Math.min(float, Math.max(0, nowMs + leadMs - g.startMs));
  if (shift === 0) return g;
  return { ...g, startMs: g.startMs + shift, endMs: g.endMs + shift, floatMs: float - shift };
}
