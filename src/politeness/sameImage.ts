import type { RequestOutcome } from '../shared/types';

/**
 * One image served for many URLs. A site's hotlink protection, or its bot defence, often
 * answers with a placeholder (a "hotlinking not allowed" picture, a 1x1 GIF) with 200 instead of
 * a refusal: every URL then ends `done`, with a thumbnail and a record of the placeholder, and
 * nothing says so. Default avatars and "no image" pictures can also run this long, so it is a
 * note for the operator, not a halt.
 */
export const SAME_IMAGE_NOTE_AFTER = 50;

/** The image answers in a row that were one and the same file: the first 8 hex digits of its sha256. */
export interface SameImageRun {
  sha: string;
  run: number;
}

/** The run after one more outcome: images only (the fetch activity gives `done` ones their `sha`). */
export function nextSameImage(prev: SameImageRun | undefined, o: Pick<RequestOutcome, 'cls' | 'final' | 'sha'>): SameImageRun | undefined {
  if (!o.final || o.cls !== 'done' || o.sha === undefined) return prev;
  return prev?.sha === o.sha ? { sha: o.sha, run: prev.run + 1 } : { sha: o.sha, run: 1 };
}

/**
 * What the status table, `crawl run` and the Web UI say once the run is long enough; stable while
 * it lasts. `pause`: the command that stops the source, left out once it has finished.
 */
export function sameImageNote(run: SameImageRun | null | undefined, pause?: string): string | undefined {
  if (!run || run.run < SAME_IMAGE_NOTE_AFTER) return undefined;
  return `one image for every URL: its last ${SAME_IMAGE_NOTE_AFTER}+ images were the same file (sha256 ${run.sha}...), ` +
    `a placeholder served instead of the images (hotlink protection, a block, or images gone)? Their records show it${pause ? `; \`${pause}\` stops asking` : ''}`;
}
