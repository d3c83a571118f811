import { DEFAULT_LATENCY, latencyElevated, learnBaseline, newLatencyState, recordTtfb, resetRecent, transferMsPerMib, type LatencyState } from './latency';

describe('latency watch', () => {
  it('is quiet while latency stays near its baseline', () => {
    const s = newLatencyState();
    for (let i = 0; i < 40; i++) recordTtfb(s, 100 + (i % 5) * 10);
    expect(latencyElevated(s)).toBe(false);
  });
  it('fires when the recent median rises well above the baseline', () => {
    const s = newLatencyState();
    for (let i = 0; i < 30; i++) recordTtfb(s, 100);
    for (let i = 0; i < 15; i++) recordTtfb(s, 400);
    expect(latencyElevated(s)).toBe(true);
    expect(s.baselineMs).toBeCloseTo(100, 0); // slow samples do not drag the baseline up
  });
  it('ignores a rise of a few ms on a very fast source', () => {
    const s = newLatencyState();
    for (let i = 0; i < 30; i++) recordTtfb(s, 2);
    for (let i = 0; i < 15; i++) recordTtfb(s, 9);
    expect(latencyElevated(s)).toBe(false);
  });

  /** Reports as the monitor gets them: `perReport` samples each `everyMs`, checked, then learnt from. */
  function crawl(s: LatencyState, ttfbOf: (n: number) => number, reports: number, { perReport = 50, everyMs = 10_000, bySample = false, from = 0, t0 = 0 } = {}) {
    const elevatedAt: number[] = [];
    for (let r = 0; r < reports; r++) {
      for (let i = 0; i < perReport; i++) recordTtfb(s, ttfbOf(from + r * perReport + i), DEFAULT_LATENCY, bySample);
      const now = t0 + r * everyMs;
      const elevated = latencyElevated(s);
      if (!bySample) learnBaseline(s, now);
      if (elevated) {
        elevatedAt.push(now);
        resetRecent(s);
      }
    }
    return elevatedAt;
  }

  it('fires for a TTFB that climbs steadily as the crawl goes on (a queue building up), which the old per-sample baseline followed', () => {
    // 70 ms, then 25 ms more with every request: 3 s after 120 requests (5 req/s, a report each 10 s).
    const climbing = (n: number) => Math.min(3_000, 70 + 25 * n);
    const s = newLatencyState();
    expect(crawl(s, climbing, 3)).toEqual([0, 10_000, 20_000]);
    expect(s.baselineMs!).toBeLessThan(400);
    const old = newLatencyState();
    expect(crawl(old, climbing, 3, { bySample: true })).toEqual([]);
    expect(old.baselineMs!).toBeGreaterThan(1_000);
  });

  it('learns a TTFB that stepped up and stayed within minutes, so the slowdowns stop', () => {
    const s = newLatencyState();
    crawl(s, () => 100, 6);
    // From 100 ms to 400 ms for good: the baseline passes half of it (the factor of 2) after ~3 min.
    const slowed = crawl(s, () => 400, 60, { t0: 60_000 });
    expect(slowed[0]).toBe(60_000);
    expect(slowed.at(-1)!).toBeGreaterThan(60_000 + 2 * 60_000);
    expect(slowed.at(-1)!).toBeLessThan(60_000 + 4 * 60_000);
    expect(s.baselineMs!).toBeGreaterThan(300);
    // The old rule never learnt it: every window's samples stayed elevated.
    const old = newLatencyState();
    crawl(old, () => 100, 6, { bySample: true });
    expect(crawl(old, () => 400, 60, { bySample: true, t0: 60_000 })).toHaveLength(60);
    expect(old.baselineMs!).toBeCloseTo(100, 0);
  });

  it('learns nothing from time without reports: the first samples after a long pause do not become the baseline', () => {
    const s = newLatencyState();
    crawl(s, () => 100, 6);
    crawl(s, () => 150, 1, { t0: 60 * 60_000 });
    // One report's worth of learning (at most a minute: ~13% of the way), not an hour's.
    expect(s.baselineMs!).toBeGreaterThan(100);
    expect(s.baselineMs!).toBeLessThan(110);
  });
});


describe('transferMsPerMib', () => {
  it('is the transfer time per MiB of bodies of 256 KiB and more only', () => {
    expect(transferMsPerMib(512 * 1024, 30, 530)).toBe(1_000);
    expect(transferMsPerMib(256 * 1024 - 1, 30, 5_030)).toBeUndefined();
    expect(transferMsPerMib(1024 * 1024, undefined, 500)).toBeUndefined();
  });
});
