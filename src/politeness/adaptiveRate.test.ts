import { DEFAULT_ADAPTIVE, isHeld, newAdaptiveState, onLatencyElevated, onThrottle, ramp } from './adaptiveRate';

describe('adaptive rate', () => {
  it('halves at once on a throttle and holds for the Retry-After', () => {
    const s = newAdaptiveState(10, 0);
    onThrottle(s, 10, 1_000, 120_000);
    expect(s.rate).toBe(5);
    expect(isHeld(s, 120_999)).toBe(true);
    expect(isHeld(s, 121_000)).toBe(false);
  });
  it('halves once for a burst of throttles, and never below the floor', () => {
    const s = newAdaptiveState(0.15, 0);
    onThrottle(s, 0.15, 1_000, undefined);
    onThrottle(s, 0.15, 1_100, undefined);
    expect(s.rate).toBe(0.1);
  });
  it('caps the hold at the configured maximum', () => {
    const s = newAdaptiveState(10, 0);
    onThrottle(s, 10, 0, 10 * 3600_000);
    expect(s.holdUntilMs).toBe(DEFAULT_ADAPTIVE.maxRetryAfterMs);
  });
  it('ramps back additively after the hold, over minutes, never above target', () => {
    const s = newAdaptiveState(10, 0);
    onThrottle(s, 10, 0, 60_000);
    ramp(s, 10, 30_000);
    expect(s.rate).toBe(5);
    ramp(s, 10, 60_000 + 18_000); // 18 s after the hold: +10/180 per s
    expect(s.rate).toBeCloseTo(6, 6);
    ramp(s, 10, 60_000 + 36_000);
    expect(s.rate).toBeCloseTo(7, 6);
    ramp(s, 10, 60_000 + 600_000);
    expect(s.rate).toBe(10);
  });
  it('lowers the rate on elevated latency, once per cooldown', () => {
    const s = newAdaptiveState(8, 0);
    expect(onLatencyElevated(s, 8, 10_000)).toBe(true);
    expect(s.rate).toBe(6);
    expect(onLatencyElevated(s, 8, 10_500)).toBe(false);
  });
});
