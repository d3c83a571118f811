/**
 * Per-process memory of sources that just answered 429/503: every activity on this worker
 * stops sending to such a source at once, without waiting for the monitor's next decision.
 * (Across workers the monitor's hold does the same job one report later.)
 */
const blockedUntil = new Map<string, number>();

export function blockSource(source: string, untilMs: number): void {
  blockedUntil.set(source, Math.max(untilMs, blockedUntil.get(source) ?? 0));
}

export function isSourceBlocked(source: string, nowMs = Date.now()): boolean {
  const until = blockedUntil.get(source);
  if (until === undefined) return false;
  if (nowMs >= until) {
    blockedUntil.delete(source);
    return false;
  }
  return true;
}

export function clearSourceBlocks(): void {
  blockedUntil.clear();
}
