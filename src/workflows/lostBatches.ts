import { STOPPED_BATCHES_WAIT_MS } from '../shared/heartbeat';
import type { BatchEntry } from './monitorState';

/**
 * A batch that ends without finishing its chunk (an operator terminated or cancelled it, it
 * failed, it timed out) is lost to its monitor: before, the monitor either waited for it for
 * ever or, when a grant to it could not be delivered, counted its chunk finished with none of
 * its URLs crawled (by hand: a batch terminated 10 s into a 60-URL source left the monitor
 * `finished` at 7/60). Now the monitor notices and starts the batch again under the same id;
 * the new run skips what the lost one recorded. A batch the monitor's current run started
 * reports its own end (the child's closing event); one from an earlier run (before a
 * continue-as-new) is probed when silent, and any batch a grant cannot reach is lost.
 * Pure bookkeeping over the monitor's batch entries; the Temporal calls are the monitor's.
 */

/** A batch silent this long while its source is crawled is asked whether it still runs. */
export const PROBE_AFTER_MS = 5 * 60_000;

/**
 * A lost batch starts again this long after it was found gone: by then a fetch activity it was
 * running has heard at a heartbeat that its workflow ended and stopped sending, so the new run
 * cannot send a URL the old one is still fetching.
 */
export const REVIVE_AFTER_MS = STOPPED_BATCHES_WAIT_MS;

/** Starts of one batch again before its source halts for an operator (a batch failing on a bug would fail each time). */
export const MAX_REVIVALS = 3;

export function heardFrom(b: BatchEntry, nowMs: number): void {
  b.heardMs = nowMs;
  // Alive after all: restarted by someone else, or a probe that failed for another reason.
  delete b.lostMs;
}

/** Batches to ask whether they still run: silent for PROBE_AFTER_MS and not known lost. */
export function silentBatches(batches: readonly BatchEntry[], nowMs: number): BatchEntry[] {
  return batches.filter((b) => b.lostMs === undefined && nowMs - (b.heardMs ?? 0) >= PROBE_AFTER_MS);
}

/** Found gone: it wants no grant until it runs again. */
export function markLost(b: BatchEntry, nowMs: number): void {
  b.lostMs ??= nowMs;
  b.unassigned = 0;
  b.unseen = [];
}

export function dueForRevival(batches: readonly BatchEntry[], nowMs: number): BatchEntry[] {
  return batches.filter((b) => b.lostMs !== undefined && nowMs - b.lostMs >= REVIVE_AFTER_MS);
}

/** Started again: a new run, which counts its grants from zero and asks for itself. */
export function markRevived(b: BatchEntry, nowMs: number): void {
  delete b.lostMs;
  b.heardMs = nowMs;
  b.revivals = (b.revivals ?? 0) + 1;
  b.grantsSent = 0;
  b.unseen = [];
  b.unassigned = 0;
}

/** When the monitor must next look at its batches: a probe or a revival falls due. */
export function nextWatchMs(batches: readonly BatchEntry[]): number | undefined {
  const times = batches.map((b) => (b.lostMs !== undefined ? b.lostMs + REVIVE_AFTER_MS : (b.heardMs ?? 0) + PROBE_AFTER_MS));
  return times.length ? Math.min(...times) : undefined;
}
