import { DEFAULT_BREAKER, newBreakerState, recordRepeat, recordSample, shouldCoolDown, shouldHalt, windowCounts } from './breaker';

function feed(errors: number, total: number, startMs = 0, spanMs = 50_000) {
  const s = newBreakerState();
  for (let i = 0; i < total; i++) recordSample(s, startMs + Math.floor((i * spanMs) / total), i < errors);
  return s;
}

describe('breaker windows', () => {
  it('cools down at 10% errors in the last minute, not at 9%', () => {
    expect(shouldCoolDown(feed(10, 100), 50_000)).toBe(true);
    expect(shouldCoolDown(feed(9, 100), 50_000)).toBe(false);
  });
  it('needs a minimum sample before judging', () => {
    expect(shouldCoolDown(feed(5, DEFAULT_BREAKER.minSamples - 1), 10_000)).toBe(false);
  });
  it('forgets samples older than 60 s', () => {
    const s = feed(30, 100, 0, 10_000);
    expect(windowCounts(s, 15_000).requests).toBe(100);
    expect(windowCounts(s, 75_000).requests).toBe(0);
    expect(shouldCoolDown(s, 75_000)).toBe(false);
  });
  it('halts after 50 consecutive errors and a success resets the run', () => {
    const s = newBreakerState();
    for (let i = 0; i < 49; i++) recordSample(s, i, true);
    expect(shouldHalt(s)).toBe(false);
    recordSample(s, 50, false);
    for (let i = 0; i < 49; i++) recordSample(s, 60 + i, true);
    expect(shouldHalt(s)).toBe(false);
    recordSample(s, 200, true);
    expect(shouldHalt(s)).toBe(true);
    expect(s.last).toBe('e'.repeat(50));
  });

  it('takes a URL failing again into the run but not the share, and halts only a run of at least 10 URLs failing afresh', () => {
    const s = newBreakerState();
    // A chunk's tail: 25 broken images at their second and third try, after a success.
    recordSample(s, 1_000, false);
    for (let i = 0; i < 50; i++) recordRepeat(s);
    expect(windowCounts(s, 2_000)).toEqual({ requests: 1, errors: 0 });
    expect(s.consecutiveErrors).toBe(50);
    expect(shouldHalt(s)).toBe(false);
    for (let i = 0; i < 9; i++) recordSample(s, 2_000, true);
    expect(shouldHalt(s)).toBe(false);
    recordSample(s, 2_000, true);
    expect(shouldHalt(s)).toBe(true);
    // A success ends the run, repeats and all.
    recordSample(s, 3_000, false);
    expect(s).toMatchObject({ consecutiveErrors: 0, freshInRun: 0 });
  });

  it('halts a run carried over from a state that did not tell repeats apart, as it would have', () => {
    // Continued-as-new before repeats were marked: every failure of its run was a fresh one.
    const s = { buckets: [], consecutiveErrors: 49, last: 'e'.repeat(49) };
    recordRepeat(s);
    expect(shouldHalt(s)).toBe(true);
  });
});
