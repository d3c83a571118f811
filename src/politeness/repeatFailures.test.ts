import { FailedUrls } from './repeatFailures';

describe('FailedUrls', () => {
  const error = (status?: number) => ({ cls: 'error' as const, sent: true, status });

  it('takes a URL\'s second and third failure as repeats, and its first not', () => {
    const f = new FailedUrls();
    expect([f.isRepeat(7, error(500)), f.isRepeat(7, error(500)), f.isRepeat(7, { cls: 'error', sent: true, reason: 'timeout: headers' } as never)]).toEqual([false, true, true]);
    // Another URL's first failure is its own.
    expect(f.isRepeat(8, error(502))).toBe(false);
  });

  it('does not count a 429/503 or an unsent try as the URL\'s own failure', () => {
    const f = new FailedUrls();
    expect(f.isRepeat(1, error(429))).toBe(false);
    expect(f.isRepeat(1, error(503))).toBe(false);
    expect(f.isRepeat(1, { cls: 'error', sent: false })).toBe(false);
    expect(f.isRepeat(1, error(500))).toBe(false);
    // Failed on its own once, a later 429 is a repeat for the breaker too (the throttle acts on it all the same).
    expect(f.isRepeat(1, error(429))).toBe(true);
  });

  it('leaves successes alone', () => {
    const f = new FailedUrls();
    f.isRepeat(3, error(500));
    expect(f.isRepeat(3, { cls: 'done', sent: true, status: 200 })).toBe(false);
  });
});
