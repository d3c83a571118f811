/**
 * Per-process memory of sources that just answered 429/503: every activity on this worker
 * stops sending to such a source at once, without waiting for the monitor's next decision.
 * (Across workers the monitor's hold does the same job one report later.)
 */
interface Block {
  /** When the latest 429/503 that set or kept the block arrived. */
  atMs: number;
  untilMs: number;
}

const blocks = new Map<string, Block>();

export function blockSource(source: string, untilMs: number, atMs = Date.now()): void {
  const b = blocks.get(source);
  blocks.set(source, { atMs: Math.max(atMs, b?.atMs ?? atMs), untilMs: Math.max(untilMs, b?.untilMs ?? untilMs) });
}

/**
 * `capMs`: the longest Retry-After the grant at hand says its monitor honours. A cap lowered
 * since the block was set (`crawl start --max-retry-after`) has ended the monitor's hold
 * sooner: a block kept to the old cap sent nothing in the grants that came after it, for up to
 * 15 minutes.
 */
export function isSourceBlocked(source: string, nowMs = Date.now(), capMs = Infinity): boolean {
  const b = blocks.get(source);
  if (b === undefined) return false;
  if (nowMs >= b.untilMs) {
    blocks.delete(source);
    return false;
  }
  return nowMs < b.atMs + capMs;
}

export function clearSourceBlocks(): void {
  blocks.clear();
}
