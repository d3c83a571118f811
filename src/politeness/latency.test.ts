import { latencyElevated, newLatencyState, recordTtfb } from './latency';

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
});
