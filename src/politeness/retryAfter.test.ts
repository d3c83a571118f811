import { parseRetryAfter } from './retryAfter';

const now = Date.parse('2026-11-21T12:00:00Z');
const cap = 15 * 60_000;

describe('Retry-After', () => {
  it('reads delta-seconds', () => expect(parseRetryAfter('120', now, cap)).toBe(120_000));
  it('reads an HTTP-date', () => expect(parseRetryAfter('Sat, 21 Nov 2026 12:02:30 GMT', now, cap)).toBe(150_000));
  // asctime is read as GMT on a worker in any zone (shared/httpDate.test.ts runs one in Berlin).
  it('reads all three HTTP date forms, on the site\'s clock in any of them', () => {
    expect(parseRetryAfter('Sat Nov 21 12:02:30 2026', now, cap)).toBe(150_000);
    expect(parseRetryAfter('Saturday, 21-Nov-26 12:02:30 GMT', now, cap)).toBe(150_000);
    expect(parseRetryAfter('Sat Nov 21 11:04:00 2026', now, cap, 'Sat Nov 21 11:00:00 2026')).toBe(240_000);
    expect(parseRetryAfter('Sat Nov 21 11:02:30 2026', now, cap, 'Sat, 21 Nov 2026 11:00:00 GMT')).toBe(150_000);
  });
  it('treats a date in the past as zero', () => expect(parseRetryAfter('Sat, 21 Nov 2026 11:00:00 GMT', now, cap)).toBe(0));
  it('measures an HTTP-date from the site\'s own Date when it sent one', () => {
    // The site's clock an hour behind ours: its "two minutes from now" is past here.
    expect(parseRetryAfter('Sat, 21 Nov 2026 11:02:00 GMT', now, cap, 'Sat, 21 Nov 2026 11:00:00 GMT')).toBe(120_000);
    // An hour ahead: two minutes, not an hour and two (capped at 15 min).
    expect(parseRetryAfter('Sat, 21 Nov 2026 13:02:00 GMT', now, cap, 'Sat, 21 Nov 2026 13:00:00 GMT')).toBe(120_000);
    // Seconds are seconds, whatever the clocks say.
    expect(parseRetryAfter('30', now, cap, 'Sat, 21 Nov 2026 11:00:00 GMT')).toBe(30_000);
    // A Date that cannot be read leaves our clock to measure by.
    expect(parseRetryAfter('Sat, 21 Nov 2026 12:02:30 GMT', now, cap, 'yesterday')).toBe(150_000);
  });
  it('honours the longest wait of a field given twice, joined by a proxy or sent as two lines', () => {
    expect(parseRetryAfter('120, 120', now, cap)).toBe(120_000);
    expect(parseRetryAfter('30,120', now, cap)).toBe(120_000);
    expect(parseRetryAfter('Sat, 21 Nov 2026 12:02:30 GMT, Sat, 21 Nov 2026 12:01:00 GMT', now, cap)).toBe(150_000);
    expect(parseRetryAfter('60, Saturday, 21-Nov-26 12:03:00 GMT', now, cap)).toBe(180_000);
    expect(parseRetryAfter('86400, 5', now, cap)).toBe(cap);
    expect(parseRetryAfter('soon, later', now, cap)).toBeUndefined();
    expect(parseRetryAfter(',', now, cap)).toBeUndefined();
  });
  it('caps a huge value', () => expect(parseRetryAfter('86400', now, cap)).toBe(cap));
  it('ignores garbage and absence', () => {
    expect(parseRetryAfter('soon', now, cap)).toBeUndefined();
    expect(parseRetryAfter('', now, cap)).toBeUndefined();
    expect(parseRetryAfter(undefined, now, cap)).toBeUndefined();
    expect(parseRetryAfter('-5', now, cap)).toBeUndefined();
    // Date.parse alone reads these as days long past: no wait at all instead of the default hold.
    expect(parseRetryAfter('soon, 90', now, cap)).toBe(90_000);
    expect(parseRetryAfter('in 5 minutes', now, cap)).toBeUndefined();
    expect(parseRetryAfter('1 2', now, cap)).toBeUndefined();
  });
  it('reads an ISO 8601 time, which some servers send', () => {
    expect(parseRetryAfter('2026-11-21T12:01:00Z', now, cap)).toBe(60_000);
  });
});
