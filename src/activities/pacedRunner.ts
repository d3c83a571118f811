import { slotTime } from '../politeness/pacing';
import type { PacingSchedule } from '../shared/types';

/**
 * Sends work on a grant's schedule. Each send takes one slot: never before the slot's time,
 * and never more than MAX_LATENESS_MS after it. Because slots are laid out for 97% of the rate,
 * at most ceil(rate) (+ burst) sends can then fall in any second, with about 20 ms to spare for
 * jitter on the way to the site (measured: up to 11 ms on a saturated 2-core machine). Work runs
 * concurrently once started; only the start times are paced.
 *
 * Waking up later than that for a slot (a busy event loop) moves the rest of the grant later by
 * the lateness: the slot is used now and every later slot keeps its spacing from it. So a late
 * wake-up costs the source the lateness (tens of ms) instead of a whole slot (a second at
 * 1 req/s), and the bound above still holds: slots only ever move apart, and none moves past the
 * grant's last slot (plus its float, when the monitor kept the timeline free that long after
 * the window: Grant.floatMs), so the next grant's first slot is still at least one spacing away. Slots
 * pushed past the last one are lost; items left without a slot go back unused. A request that
 * could not leave within the bound (a slow step before the socket) may go late on the same
 * terms, as long as no later slot has sent yet: then the rest of the grant moves instead of the
 * slot being lost (at 1 req/s, slots lost this way were most of a slow source's shortfall).
 */

export const MAX_LATENESS_MS = 10;

export interface PacedRunOptions<R> {
  count: number;
  schedule: PacingSchedule;
  /** Indices already done by an earlier attempt (from heartbeat details): not sent again. */
  skip?: ReadonlySet<number>;
  /**
   * Starts item `index` in the slot at `slotMs`; the request must leave by slotMs +
   * MAX_LATENESS_MS, or else only if `mayGoLate()` says yes at the moment it would leave.
   */
  run(index: number, slotMs: number, mayGoLate: () => boolean): Promise<R>;
  /**
   * True when the run's item should wait for a later slot (it was too late by the time it could
   * leave, or the slot went to robots.txt): the item goes to the back of the line. 'next': it
   * takes the very next slot (a redirect's next hop). 'later': not in this grant (its host's
   * robots.txt is to be read again later); it goes back unused. Also from `decide`, without a slot.
   */
  requeued?(result: R): boolean | 'next' | 'later';
  /**
   * Called for the item next in line as the runner starts waiting for its slot (no wake-up of its
   * own: with hundreds of sources on a worker, a second timer per slot made slots late): e.g. to
   * open a connection, so that the request can leave the moment its slot comes.
   */
  prepare?(index: number, slotMs: number): void;
  /**
   * The item's result when it is certain without sending anything (robots.txt rules it out, say):
   * such an item takes no slot, so the grant's slots all go to requests.
   */
  decide?(index: number): R | undefined;
  /**
   * Which item in line may take the slot at `slotMs` (its position in `line`), or -1 when none may
   * yet (each waits for its host's Crawl-delay, say): that slot passes unused, not missed. Without
   * it, the item first in line takes every slot.
   */
  choose?(line: readonly number[], slotMs: number): number;
  /**
   * True when `choose`'s last -1 was for items that wait for requests to end (their site has as
   * many open as it bears), which may happen at any moment: the run does not end early for it.
   */
  heldOpen?(): boolean;
  /** Checked before every send: true stops dispatching (e.g. the source said 429). */
  shouldStop(): boolean;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Aborts waiting (activity cancelled). */
  signal?: AbortSignal;
}

export interface PacedRunResult<R> {
  results: Map<number, R>;
  unused: number[];
  sentAt: number[];
  /**
   * Slots that did not serve their item: late wake-ups moved them past the grant's end while
   * items waited, or the run handed its item back for a later slot (it could not leave in time
   * at the socket, the slot went to robots.txt, or image work was backed up).
   */
  missed: number;
  /** Items settled by `decide` (or put off by it for a later grant), without a slot. */
  decided: number;
  /** Slots that passed with items in line that `choose` let none of take. */
  passed: number;
  /**
   * The latest slot a request went out in (moved, as a late send moves it); undefined when none
   * did. The grant's timeline after it plus one spacing is free once the run has returned.
   */
  lastSendMs?: number;
}

/**
 * The abort listener goes when the timer fires: a grant sleeps once per slot, and listeners left
 * on the activity's signal piled up by the thousand, making every add and remove on it (one per
 * request, in the fetcher) walk the whole list.
 */
const defaultSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const onAbort = () => { clearTimeout(t); resolve(); };
    const t = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

export function slotCount(schedule: PacingSchedule): number {
  return Math.max(0, Math.round((schedule.endMs - schedule.startMs) / schedule.intervalMs)) + schedule.burstSlots;
}

export async function runPaced<R>(o: PacedRunOptions<R>): Promise<PacedRunResult<R>> {
  const now = o.now ?? Date.now;
  const sleep = o.sleep ?? ((ms: number) => defaultSleep(ms, o.signal));
  const results = new Map<number, R>();
  const sentAt: number[] = [];
  const inflight: Promise<void>[] = [];
  const items = Array.from({ length: o.count }, (_, i) => i).filter((i) => !o.skip?.has(i));
  const slots = slotCount(o.schedule);
  let next = 0;
  let missed = 0;
  let running = 0;
  // The monitor keeps the timeline free for the float after the window: slots may move that much further.
  const lastSlotMs = slotTime(o.schedule, slots - 1) + Math.max(0, o.schedule.floatMs ?? 0);
  /** How far late wake-ups have moved the grant's remaining slots. */
  let shiftMs = 0;
  const slotAt = (j: number) => slotTime(o.schedule, j) + shiftMs;
  /** Slots lost to lateness count as missed only if an item in line could have gone in them. */
  const couldSend = (slotMs: number) => next < items.length && (!o.choose || o.choose(items.slice(next), slotMs) >= 0);
  /** True when slot j has been moved past the grant's last slot: it and the ones after are lost. */
  const ranOut = (j: number) => {
    if (slotAt(j) <= lastSlotMs) return false;
    if (couldSend(slotAt(j))) missed += slots - j;
    return true;
  };
  // Slots keep coming while runs are in flight: one may hand its item back for a later slot.
  let waitingFor = 0; // the slot the loop is waiting for (or about to send in)
  let slotsLeft = true; // false once the loop has ended: no slot is waited for
  let sends = 0;
  // The first run that failed. Its rejection is taken at once, not left for the Promise.all
  // after the loop: a rejection with no handler while the loop waits for its next slot ended
  // the whole worker process (Node's default for unhandled rejections).
  let failure: { err: unknown } | undefined;
  let decided = 0;
  let passed = 0;
  let lastSendMs: number | undefined;
  /** Items put off to a later grant: they go back unused. */
  const later: number[] = [];
  /** Settles the items at the head of the line that need no request; the next one takes the slot. */
  const decideHead = () => {
    while (o.decide && next < items.length) {
      const index = items[next]!;
      const r = o.decide(index);
      if (r === undefined) return;
      if (o.requeued?.(r) === 'later') later.push(index);
      else results.set(index, r);
      next += 1;
      decided += 1;
    }
  };
  /** Brings the item `choose` picks for the slot to the head of the line; false when it picks none. */
  const chooseFor = (slotMs: number): boolean => {
    if (!o.choose || next >= items.length) return true;
    const k = o.choose(items.slice(next), slotMs);
    if (k < 0) return false;
    if (k > 0) items.splice(next, 0, ...items.splice(next + k, 1));
    return true;
  };
  for (let j = 0; j < slots; j++) {
    decideHead();
    if (next >= items.length && running === 0) break;
    waitingFor = j;
    if (ranOut(j)) break;
    // A stop that came before this slot (a 429 answered, the worker's network gone): leaving
    // now, not once the slot has come, hands the rest back that much sooner.
    if (failure || o.shouldStop()) break;
    if (o.prepare && next < items.length && chooseFor(slotAt(j))) o.prepare(items[next]!, slotAt(j));
    // Timers may fire a little early by the wall clock: wait until the slot has really come
    // (and, should a late send have moved it meanwhile, until it has come again).
    for (let t = now(); t < slotAt(j); t = now()) {
      if (o.signal?.aborted) break;
      await sleep(slotAt(j) - t);
    }
    if (ranOut(j)) break;
    let at = slotAt(j);
    if (failure || o.shouldStop() || o.signal?.aborted) break;
    // What came back while the loop waited (robots.txt read meanwhile) may need no slot now.
    decideHead();
    if (next >= items.length) continue; // nothing to send in this slot right now
    if (!chooseFor(at)) {
      passed += 1;
      // Nothing in line may go by the grant's last slot, and nothing in flight can hand one back:
      // the run ends now, so that the monitor may give the rest of the window to the next grant.
      if (running === 0 && !couldSend(lastSlotMs) && !o.heldOpen?.()) break;
      continue;
    }
    const t = now();
    if (t > at + MAX_LATENESS_MS) {
      if (t > lastSlotMs) {
        if (couldSend(t)) missed += slots - j; // even this slot, moved to now, would be past the grant's end
        break;
      }
      shiftMs += t - at;
      at = t;
    }
    const index = items[next++]!;
    sentAt.push(t);
    lastSendMs = at;
    running += 1;
    const send = ++sends;
    let slotMs = at;
    const mayGoLate = () => {
      if (send !== sends) return false; // a later slot has sent: this one cannot move
      const late = now();
      if (late > lastSlotMs) return false;
      if (late > slotMs) {
        shiftMs += late - slotMs;
        slotMs = late;
        lastSendMs = late; // this is the latest send (checked above)
      }
      return true;
    };
    inflight.push(o.run(index, at, mayGoLate).then((r) => {
      running -= 1;
      const again = o.requeued?.(r);
      if (again) {
        // A redirect hop used its slot for a request: not a missed one. The loop may already
        // be waiting for the next slot, so the item is prepared now (not after the last slot:
        // a connection opened for a slot gone by went unused, one per slow source's first window).
        if (again === 'next') {
          items.splice(next, 0, index);
          if (slotsLeft) o.prepare?.(index, slotAt(waitingFor));
        } else if (again === 'later') {
          // Put off to another grant (its host's robots.txt is to be read again): it needs no
          // slot in this one, and the worker did not fall behind. Counted as a miss, a source
          // whose robots.txt could not be read showed "workers behind" when its hold ended.
          later.push(index);
        } else {
          items.push(index);
          missed += 1;
        }
      } else {
        results.set(index, r);
      }
    }, (err: unknown) => {
      running -= 1;
      failure ??= { err };
    }));
  }
  slotsLeft = false;
  await Promise.all(inflight);
  // Nothing more was sent after the failure; the runs still in flight have finished.
  if (failure) throw failure.err;
  // Slots are over (or sending stopped): what needs none is settled all the same.
  const unused: number[] = [...later];
  for (const index of items.slice(next)) {
    const r = o.signal?.aborted ? undefined : o.decide?.(index);
    if (r === undefined || o.requeued?.(r) === 'later') unused.push(index);
    else results.set(index, r);
    if (r !== undefined) decided += 1;
  }
  return { results, unused, sentAt, missed, decided, passed, ...(lastSendMs !== undefined ? { lastSendMs } : {}) };
}
