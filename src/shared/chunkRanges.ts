import type { ChunkRange, WorkChunk, WorkItem } from './types';

/**
 * Chunk ranges and the sets of chunk numbers a monitor has seen, kept as sorted disjoint
 * intervals. Pure and deterministic: used by workflow code and by `crawl start`.
 */

export function isChunkRange(item: WorkItem): item is ChunkRange {
  return (item as ChunkRange).first !== undefined;
}

export function chunkSpoolKey(spoolPrefix: string, n: number): string {
  return `${spoolPrefix}${String(n).padStart(6, '0')}.txt`;
}

/** The marker a finished chunk leaves beside its URL list: a later start skips the chunk. */
export function chunkDoneKey(spoolKey: string): string {
  return spoolKey.replace(/\.txt$/, '.done');
}

/** The chunk number of a done-marker listed under `spoolPrefix`, or undefined for any other key. */
export function doneChunkNumber(spoolPrefix: string, key: string): number | undefined {
  if (!key.startsWith(spoolPrefix)) return undefined;
  const m = /^(\d+)\.done$/.exec(key.slice(spoolPrefix.length));
  if (!m) return undefined;
  const n = Number(m[1]);
  return key === chunkDoneKey(chunkSpoolKey(spoolPrefix, n)) ? n : undefined;
}

export function rangeChunks(r: ChunkRange): number {
  return r.last - r.first + 1;
}

export function rangeUrls(r: ChunkRange): number {
  return (r.last - r.first) * r.chunkSize + r.lastCount;
}

export function chunkOf(r: ChunkRange, n: number): WorkChunk {
  return { chunkId: `${r.idPrefix}${n}`, count: n === r.last ? r.lastCount : r.chunkSize, spool: chunkSpoolKey(r.spoolPrefix, n) };
}

/** The part of a range from chunk `first` to `last` (inclusive), with the right last count. */
export function subRange(r: ChunkRange, first: number, last: number): ChunkRange {
  return { ...r, first, last, lastCount: last === r.last ? r.lastCount : r.chunkSize };
}

/** `b` continues `a`: same chunk files, next number, and `a` ends on a full chunk. */
function extendsRange(a: ChunkRange, b: ChunkRange): boolean {
  return a.idPrefix === b.idPrefix && a.spoolPrefix === b.spoolPrefix && a.chunkSize === b.chunkSize
    && b.first === a.last + 1 && a.lastCount === a.chunkSize;
}

/** Adds `part` at the end of `list`, merged into the last entry when it continues that range. */
export function appendRange(list: WorkItem[], part: ChunkRange): void {
  const tail = list[list.length - 1];
  if (tail && isChunkRange(tail) && extendsRange(tail, part)) list[list.length - 1] = { ...tail, last: part.last, lastCount: part.lastCount };
  else list.push(part);
}

export type Intervals = [number, number][];

/** The parts of [first, last] not in `seen` (sorted, disjoint). */
export function unseenParts(seen: Intervals, first: number, last: number): Intervals {
  const out: Intervals = [];
  let from = first;
  for (const [a, b] of seen) {
    if (b < from) continue;
    if (a > last) break;
    if (a > from) out.push([from, a - 1]);
    from = Math.max(from, b + 1);
    if (from > last) return out;
  }
  if (from <= last) out.push([from, last]);
  return out;
}

/** Adds [first, last] to `seen`, merging neighbours, and returns the new list. */
export function addInterval(seen: Intervals, first: number, last: number): Intervals {
  const out: Intervals = [];
  let [a, b] = [first, last];
  let placed = false;
  for (const [x, y] of seen) {
    if (y < a - 1) out.push([x, y]);
    else if (x > b + 1) {
      if (!placed) { out.push([a, b]); placed = true; }
      out.push([x, y]);
    } else {
      a = Math.min(a, x);
      b = Math.max(b, y);
    }
  }
  if (!placed) out.push([a, b]);
  return out;
}
