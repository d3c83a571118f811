import { slotTime } from '../politeness/pacing';
import type { PacingSchedule } from '../shared/types';

/**
 * Sends work on a grant's schedule: item j never before its slot, never closer than one
 * interval to the previous send (except burst slots), and never after the grant's window.
 * Work runs concurrently once started; only the start times are paced.
 */

export interface PacedRunOptions<R> {
  count: number;
  schedule: PacingSchedule;
  /** Indices already done by an earlier attempt (from heartbeat details): not sent again. */
  skip?: ReadonlySet<number>;
  run(index: number): Promise<R>;
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
}

const defaultSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });

export async function runPaced<R>(o: PacedRunOptions<R>): Promise<PacedRunResult<R>> {
  const now = o.now ?? Date.now;
  const sleep = o.sleep ?? ((ms: number) => defaultSleep(ms, o.signal));
  const results = new Map<number, R>();
  const unused: number[] = [];
  const sentAt: number[] = [];
  const inflight: Promise<void>[] = [];
  const { schedule } = o;
  // Slots are laid out slightly wider than the minimum gap, so a send delayed by a busy event
  // loop can catch up on later slots without two sends ever coming closer than minGap.
  const minGap = Math.min(schedule.minGapMs ?? schedule.intervalMs, schedule.intervalMs);
  // A send must leave a full gap before the window ends, where the next grant may start.
  const lastSendMs = schedule.endMs - minGap;
  let lastSent = -Infinity;
  let slot = 0;
  for (let index = 0; index < o.count; index++) {
    if (o.skip?.has(index)) continue;
    const j = slot++;
    // Burst slots and the first spaced slot share the window start; later ones are spaced.
    const spacing = j <= schedule.burstSlots ? 0 : minGap;
    const earliest = Math.max(slotTime(schedule, j), lastSent + spacing);
    let t = now();
    if (t < earliest) {
      await sleep(earliest - t);
      t = Math.max(now(), earliest);
    }
    const tooLate = t > lastSendMs;
    if (o.shouldStop() || o.signal?.aborted || tooLate) {
      unused.push(index);
      for (let rest = index + 1; rest < o.count; rest++) if (!o.skip?.has(rest)) unused.push(rest);
      break;
    }
    lastSent = t;
    sentAt.push(t);
    inflight.push(o.run(index).then((r) => { results.set(index, r); }));
  }
  await Promise.all(inflight);
  return { results, unused, sentAt };
}
