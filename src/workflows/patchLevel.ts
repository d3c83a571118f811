import { patched } from '@temporalio/workflow';

/**
 * Patches a workflow started by this code takes without asking patched().
 *
 * patched() keeps histories recorded before a change replaying the old way, but each first call
 * in a run costs two history events: a marker, and an upsert of the TemporalChangeVersion search
 * attribute that the SDK adds to every patch marker, which the server writes to its visibility
 * store. With seven patches met in a source's monitor and batch that was 14 of ~105 events per
 * small source, and about two thirds of the embedded server's visibility writes (a profile of
 * 200 sources at 1 req/s: visibility upserts 9% of its CPU).
 *
 * A workflow's input carries the level of the code that started it (a new run: its monitor's
 * `crawl start`, its continue-as-new, or the monitor starting its batch). Every patch of that
 * level is in effect for the whole run without a marker, which is deterministic because the
 * input is part of the history. A history without a level (recorded before levels, or started
 * by hand with the Temporal CLI) calls patched() as before, so it replays unchanged.
 *
 * A new patch joins a new level at once: append a list to LEVELS (the previous level's patches
 * and the new one); never change an existing one. Workflows of a lower level (or none) ask
 * patched() for it: true when they meet it live, false when replaying a history from before it.
 * A level higher than this code knows (input from a newer build, during a rollback) counts as
 * the highest known one: every patch this code has is in effect there.
 */
const LEVEL_1 = [
  // monitor
  'honour-crawl-delay', 'hold-for-robots', 'hold-for-store', 'adaptive-grant-lead', 'resume-keeps-temporary-halt',
  'batch-restart-after-stop', 'probe-adopted-batch', 'short-first-window', 'tail-grant-slack',
  'revoke-grants-when-granting-stops', 'monitor-waits-for-stopped-batches',
  // batch
  'batch-waits-for-fetches-on-cancel', 'batch-bookkeeping-local-activities', 'record-units-by-batch-run',
  'store-outage-keeps-attempts', 'report-grant-finished-after-stop', 'report-recorded-outcomes', 'grants-carry-decided-urls',
] as const;

const LEVEL_2 = [...LEVEL_1, 'finish-in-last-report', 'reclaim-window-tail', 'whole-source-in-one-window'] as const;

const LEVEL_3 = [...LEVEL_2, 'first-grant-with-start'] as const;

const LEVEL_4 = [...LEVEL_3, 'chunk-work-in-one-local-activity', 'done-marker-with-last-fetch', 'search-attributes-from-start'] as const;

const LEVEL_5 = [...LEVEL_4, 'final-search-attributes-once'] as const;

const LEVEL_6 = [...LEVEL_5, 'finished-state-shown'] as const;

const LEVEL_7 = [...LEVEL_6, 'revive-lost-batches'] as const;

const LEVEL_8 = [...LEVEL_7, 'small-source-batch-in-monitor'] as const;

const LEVEL_9 = [...LEVEL_8, 'float-slow-windows'] as const;

const LEVEL_10 = [...LEVEL_9, 'halt-on-pages'] as const;

const LEVEL_11 = [...LEVEL_10, 'latency-baseline-by-time'] as const;

const LEVEL_12 = [...LEVEL_11, 'float-short-first-grant'] as const;

const LEVEL_13 = [...LEVEL_12, 'spread-host-waited-urls', 'lift-crawl-delay-cap'] as const;

const LEVEL_14 = [...LEVEL_13, 'crawl-delay-after-booked'] as const;

const LEVEL_15 = [...LEVEL_14, 'mark-repeat-failures'] as const;

const LEVEL_16 = [...LEVEL_15, 'watch-download-speed'] as const;

export type PatchId = (typeof LEVEL_16)[number];

const LEVELS: readonly (readonly PatchId[])[] = [[], LEVEL_1, LEVEL_2, LEVEL_3, LEVEL_4, LEVEL_5, LEVEL_6, LEVEL_7, LEVEL_8, LEVEL_9, LEVEL_10, LEVEL_11, LEVEL_12, LEVEL_13, LEVEL_14, LEVEL_15, LEVEL_16];

/** The level of this code: what a workflow it starts puts in its input. */
export const PATCH_LEVEL = LEVELS.length - 1;

function levelPatches(level: number | undefined): ReadonlySet<string> {
  return new Set<string>(Number.isInteger(level) && level! > 0 ? LEVELS[Math.min(level!, PATCH_LEVEL)]! : []);
}

/** The level that brought a patch: a workflow of that level or above takes it without a marker. */
export function levelOf(id: PatchId): number {
  return LEVELS.findIndex((level) => level.includes(id));
}

/** Whether a patch is in effect for this run, given the level its input carries. */
export function patchesOf(level: number | undefined): (id: PatchId) => boolean {
  const inEffect = levelPatches(level);
  return (id) => inEffect.has(id) || patched(id);
}

/** Whether the level alone puts a patch in effect, without asking patched() (which records a marker). */
export function inLevel(level: number | undefined, id: PatchId): boolean {
  return levelPatches(level).has(id);
}
