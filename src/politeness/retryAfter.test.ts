import { parseRetryAfter } from './retryAfter';

const now = Date.parse('2026-11-21T12:00:00Z');
const cap = 15 * 60_000;

describe('Retry-After', () => {
  it('reads delta-seconds', () => expect(parseRetryAfter('120', now, cap)).toBe(120_000));
  it('reads an HTTP-date', () => expect(parseRetryAfter('Sat, 21 Nov 2026 12:02:30 GMT', now, cap)).toBe(150_000));
  it('treats a date in the past as zero', () => expect(parseRetryAfter('Sat, 21 Nov 2026 11:00:00 GMT', now, cap)).toBe(0));
  it('caps a huge value', () => expect(parseRetryAfter('86400', now, cap)).toBe(cap));
  it('ignores garbage and absence', () => {
    expect(parseRetryAfter('soon', now, cap)).toBeUndefined();
    expect(parseRetryAfter('', now, cap)).toBeUndefined();
    expect(parseRetryAfter(undefined, now, cap)).toBeUndefined();
    expect(parseRetryAfter('-5', now, cap)).toBeUndefined();
  });
});
