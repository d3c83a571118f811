import { parseHttpDate } from '../shared/httpDate';

/**
 * Parses a Retry-After value (RFC 9110: delta-seconds or an HTTP-date) into ms from `nowMs`.
 * Returns undefined for a missing or unparsable value; never negative; capped at `capMs`.
 *
 * An HTTP-date is on the site's clock: with the response's Date header (`siteDate`) it is
 * measured from that, so a site whose clock is behind ours still gets the wait it asked for.
 * Measured from our clock, a site an hour behind asking for two minutes got none: its date was
 * already past here, and the source went on at once.
 */
export function parseRetryAfter(value: string | undefined | null, nowMs: number, capMs: number, siteDate?: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  let ms: number;
  if (/^\d+$/.test(trimmed)) {
    ms = Number(trimmed) * 1000;
  } else if (/[A-Za-z]/.test(trimmed)) {
    // Not one of HTTP's three date forms (an ISO 8601 time, say): read as Date.parse reads it.
    const at = parseHttpDate(trimmed) ?? Date.parse(trimmed);
    if (Number.isNaN(at)) return undefined;
    const siteNowMs = siteDate === undefined ? undefined : parseHttpDate(siteDate);
    ms = at - (siteNowMs ?? nowMs);
  } else {
    return undefined;
  }
  return Math.min(capMs, Math.max(0, ms));
}
