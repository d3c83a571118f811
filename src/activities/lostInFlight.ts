import type { BatchItem, RequestOutcome } from '../shared/types';

/**
 * URLs an attempt of a grant had under way when its process died. A URL whose handling kills
 * the worker (a decoder crash, memory it exhausts, a bug it reaches) was otherwise never charged
 * a try: the retry of the grant found it neither finished nor settled, and sent it again, or,
 * its window over by the time the heartbeat timed out, handed it back to the batch unused, for
 * the next grant to send it again. One image killed a worker 29 times in 15 minutes that way,
 * the site asked for it as often. Charged the try it was on, such a URL ends after the batch's
 * maxAttempts deaths, as a URL failing any other way does.
 *
 * What was under way is known from the grant's journal on this machine (a line as a URL's run
 * begins and one as it ends; its finished entry ends it too) and, for a retry on another
 * machine, from the last heartbeat. A heartbeat is up to 8 s old: a URL that ended after it
 * without finishing (handed back for a later slot) may be charged a try it did not use. A URL
 * whose run threw ended all the same: only a process that died leaves one open.
 */

/** The journal line written as item `i`'s run begins (a request, or a redirect's next hop). */
export const openLine = (i: number) => ({ open: i });
/** The journal line written as item `i`'s run ends without finishing it. */
export const closedLine = (i: number) => ({ closed: i });

const index = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined);

/**
 * The items the attempts before this one left under way: open in the journal (lines in the
 * order written), or open in the last heartbeat and not ended in the journal; none finished.
 */
export function lostInFlight(journal: readonly unknown[], heartbeatOpen: readonly unknown[] | undefined, finished: { has(i: number): boolean }, count: number): number[] {
  const state = new Map<number, 'open' | 'ended'>();
  for (const line of journal) {
    if (!line || typeof line !== 'object') continue;
    const { open, closed, i } = line as { open?: unknown; closed?: unknown; i?: unknown };
    const opened = index(open);
    const ended = index(closed) ?? index(i);
    if (opened !== undefined) state.set(opened, 'open');
    else if (ended !== undefined) state.set(ended, 'ended');
  }
  const lost = new Set<number>();
  for (const [i, s] of state) if (s === 'open') lost.add(i);
  for (const v of Array.isArray(heartbeatOpen) ? heartbeatOpen : []) {
    const i = index(v);
    if (i !== undefined && state.get(i) !== 'ended') lost.add(i);
  }
  return [...lost].filter((i) => i < count && !finished.has(i)).sort((a, b) => a - b);
}

/**
 * A lost URL's outcome: the try it was on is used, and at its last try it ends as an error.
 * Not sent: its death is the worker's, not a sample of the site's health.
 */
export function lostOutcome(item: BatchItem, maxAttempts: number): RequestOutcome {
  return {
    url: item.url, cls: 'error', sent: false, attempt: item.attempt, final: item.attempt >= maxAttempts,
    reason: `worker died: its process ended while handling this URL (try ${item.attempt} of ${maxAttempts})`,
  };
}
