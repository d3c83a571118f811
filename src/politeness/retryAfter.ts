/**
 * Parses a Retry-After value (RFC 9110: delta-seconds or an HTTP-date) into ms from `nowMs`.
 * Returns undefined for a missing or unparsable value; never negative; capped at `capMs`.
 */
export function parseRetryAfter(value: string | undefined | null, nowMs: number, capMs: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  let ms: number;
  if (/^\d+$/.test(trimmed)) {
    ms = Number(trimmed) * 1000;
  } else if (/[A-Za-z]/.test(trimmed)) {
    const at = Date.parse(trimmed);
    if (Number.isNaN(at)) return undefined;
    ms = at - nowMs;
  } else {
    return undefined;
  }
  return Math.min(capMs, Math.max(0, ms));
}
