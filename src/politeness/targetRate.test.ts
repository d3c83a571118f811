import { invalidBurst, invalidRate, rateFromSize, targetRate } from './targetRate';

describe('rate from source size', () => {
  it('is 1 req/s for small sources and 200 req/s for the largest', () => {
    expect(rateFromSize(0)).toBe(1);
    expect(rateFromSize(5_000)).toBe(1);
    expect(rateFromSize(500_000_000)).toBe(200);
    expect(rateFromSize(2_000_000_000)).toBe(200);
  });
  it('interpolates linearly in between', () => {
    const mid = (5_000 + 500_000_000) / 2;
    expect(rateFromSize(mid)).toBeCloseTo(100.5, 6);
    expect(rateFromSize(250_000_000)).toBeCloseTo(1 + 199 * (250_000_000 - 5_000) / (500_000_000 - 5_000), 9);
  });
  it('lets an explicit rate override the size, and the global ceiling cap both', () => {
    expect(targetRate({ imageCount: 500_000_000, explicitRate: 3 })).toBe(3);
    expect(targetRate({ imageCount: 500_000_000, globalCeiling: 50 })).toBe(50);
    expect(targetRate({ explicitRate: 80, globalCeiling: 50 })).toBe(50);
  });
  it('rejects unusable rates and bursts with a message', () => {
    expect(invalidRate(-1)).toMatch(/greater than 0/);
    expect(invalidRate(Number.NaN)).toMatch(/finite/);
    expect(invalidRate('5')).toMatch(/finite/);
    expect(invalidRate(2.5)).toBeUndefined();
    expect(invalidBurst(1.5)).toMatch(/whole number/);
    expect(invalidBurst(3)).toBeUndefined();
  });
});
