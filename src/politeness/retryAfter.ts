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
/** The longest Retry-After read (a site's week is read as this): past any wait a monitor honours. */
export const RETRY_AFTER_READ_CAP_MS = 24 * 3_600_000;

export function parseRetryAfter(value: string | undefined | null, nowMs: number, capMs: number, siteDate?: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  const one = parseOne(trimmed, nowMs, siteDate);
  if (one !== undefined || !trimmed.includes(',')) return one === undefined ? undefined : Math.min(capMs, Math.max(0, one));
  // The field given twice: joined by a proxy ("120, 120"), or sent as two lines (the fetcher
  // joins them). Unreadable as one value, it got the default hold of 5 s; the longest wait of
  // those readable is what the site asked for at most, and honouring it is the polite reading.
  const waits = listItems(trimmed).map((item) => parseOne(item, nowMs, siteDate)).filter((ms): ms is number => ms !== undefined);
  return waits.length ? Math.min(capMs, Math.max(0, ...waits)) : undefined;
}

/** One value's wait in ms (negative for a date past), undefined when it is neither form. */
function parseOne(text: string, nowMs: number, siteDate?: string): number | undefined {
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Not one of HTTP's three date forms but an ISO 8601 time: read as Date.parse reads it. Only
  // that: Date.parse takes almost anything with a number in it ("soon, 90" is a day in 1990).
  const at = parseHttpDate(text) ?? (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(text) ? Date.parse(text) : NaN);
  if (Number.isNaN(at)) return undefined;
  const siteNowMs = siteDate === undefined ? undefined : parseHttpDate(siteDate);
  return at - (siteNowMs ?? nowMs);
}

/** A comma-joined list's items; a date's own comma (after its weekday) stays in it. */
function listItems(text: string): string[] {
  const items: string[] = [];
  let weekday: string | undefined;
  for (const part of text.split(',')) {
    const t = part.trim();
    if (weekday !== undefined) {
      items.push(`${weekday}, ${t}`);
      weekday = undefined;
    } else if (/^(mon|tue|wed|thu|fri|sat|sun)[a-z]*$/i.test(t)) {
      weekday = t;
    } else if (t) {
      items.push(t);
    }
  }
  return items;
}
