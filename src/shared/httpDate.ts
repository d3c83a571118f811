/**
 * An HTTP date (RFC 9110 section 5.6.7: IMF-fixdate, or the obsolete RFC 850 and asctime forms
 * that a recipient must still accept) as epoch ms, else undefined. asctime carries no zone and
 * is GMT, but Date.parse reads it as local time: on a worker in Berlin a site's "Retry-After:
 * Sat Nov 21 12:02:30 2026" was an hour in the past, and held nothing. A bare number or a date
 * without a time is no HTTP date either: Date.parse would read `2024` or `12/01/2024` as dates
 * of its own guessing.
 */
export function parseHttpDate(value: string): number | undefined {
  const v = value.trim();
  // The day of the month is captured by whichever form matched.
  const m = /^[A-Za-z]{3,9},? +(\d{1,2})[ -][A-Za-z]{3}[ -]\d{2,4} +\d{2}:\d{2}:\d{2} +GMT$|^[A-Za-z]{3} +[A-Za-z]{3} +(\d{1,2}) +\d{2}:\d{2}:\d{2} +\d{4}$/.exec(v);
  if (!m) return undefined;
  const ms = Date.parse(m[1] !== undefined ? v : `${v} GMT`);
  if (!Number.isFinite(ms)) return undefined;
  // Date.parse rolls 31 Feb over into March: a day the month does not have is no date.
  return new Date(ms).getUTCDate() === Number(m[1] ?? m[2]) ? ms : undefined;
}
