import { ceilings, fairShares, floatGrant, maxInAnyWindow, newPacerState, planWindow, slotTime, slowWindowFloatMs, windowLengthMs } from './pacing';

function sendTimes(grants: ReturnType<typeof planWindow>): number[] {
  return grants.flatMap((g) => Array.from({ length: g.slots }, (_, j) => slotTime(g, j)));
}

describe('pacing', () => {
  it('gives windows to batches in rotating order, filling one before the next', () => {
    const two = [{ batchId: 'a', wanted: 100 }, { batchId: 'b', wanted: 100 }];
    expect(fairShares(two, 10, 0)).toEqual([10, 0]);
    expect(fairShares(two, 10, 1)).toEqual([0, 10]);
    expect(fairShares([{ batchId: 'a', wanted: 2 }, { batchId: 'b', wanted: 100 }], 10, 0)).toEqual([2, 8]);
    const three = [{ batchId: 'a', wanted: 5 }, { batchId: 'b', wanted: 5 }, { batchId: 'c', wanted: 5 }];
    expect(fairShares(three, 12, 2)).toEqual([5, 2, 5]);
  });

  it('is fair over successive windows', () => {
    const pacer = newPacerState();
    const got = { a: 0, b: 0, c: 0 };
    let now = 0;
    for (let w = 0; w < 30; w++) {
      for (const g of planWindow(pacer, { nowMs: now, rate: 10, burst: 0, leadMs: 0, windowMs: 2_000 }, [{ batchId: 'a', wanted: 1e6 }, { batchId: 'b', wanted: 1e6 }, { batchId: 'c', wanted: 1e6 }])) {
        got[g.batchId as 'a' | 'b' | 'c'] += g.slots;
      }
      now = pacer.nextFreeMs;
    }
    expect(got).toEqual({ a: 200, b: 200, c: 200 });
  });

  it('gives each grant a contiguous stretch of one timeline, disjoint from the others', () => {
    const pacer = newPacerState();
    const grants = planWindow(pacer, { nowMs: 1_000, rate: 10, burst: 0, leadMs: 300, windowMs: 2_000 },
      [{ batchId: 'a', wanted: 50 }, { batchId: 'b', wanted: 50 }]);
    expect(grants.map((g) => [g.batchId, g.slots, g.startMs, g.endMs])).toEqual([['a', 20, 1_300, 3_300]]);
    const next = planWindow(pacer, { nowMs: 2_000, rate: 10, burst: 0, leadMs: 300, windowMs: 1_000 },
      [{ batchId: 'a', wanted: 3 }, { batchId: 'b', wanted: 50 }]);
    // b's turn now; a small want after it would share the window, b first.
    expect(next.map((g) => [g.batchId, g.slots, g.startMs, g.endMs])).toEqual([['b', 10, 3_300, 4_300]]);
    const third = planWindow(pacer, { nowMs: 3_000, rate: 10, burst: 0, leadMs: 300, windowMs: 1_000 },
      [{ batchId: 'a', wanted: 3 }, { batchId: 'b', wanted: 40 }]);
    expect(third.map((g) => [g.batchId, g.slots, g.startMs, g.endMs])).toEqual([['a', 3, 4_300, 4_600], ['b', 7, 4_600, 5_300]]);
    expect(pacer.nextFreeMs).toBe(5_300);
  });

  it.each([0.5, 1, 3, 7.5, 50, 200])('never exceeds the 1 s and 10 s ceilings at rate %p over 10 minutes', (rate) => {
    const pacer = newPacerState();
    const times: number[] = [];
    let now = 0;
    let round = 0;
    while (now < 600_000) {
      const wants = [{ batchId: 'a', wanted: 1e6 }, { batchId: 'b', wanted: round % 3 === 0 ? 3 : 1e6 }];
      times.push(...sendTimes(planWindow(pacer, { nowMs: now, rate, burst: 0, leadMs: 300, windowMs: windowLengthMs(rate) }, wants)));
      // The monitor plans the next window a little before the current one ends.
      now = Math.max(now + 1, pacer.nextFreeMs - 500);
      round++;
    }
    const c = ceilings(rate, 0);
    expect(maxInAnyWindow(times, 1_000)).toBeLessThanOrEqual(c.perSecond);
    expect(maxInAnyWindow(times, 10_000)).toBeLessThanOrEqual(c.perTenSeconds);
    // ...and is not wastefully slow either: back-to-back windows deliver the rate.
    expect(times.length / 600).toBeGreaterThanOrEqual(rate * 0.97);
  });

  it('spends burst only when earned by idle time and stays within ceil(rate) + burst', () => {
    const pacer = newPacerState();
    const times: number[] = [];
    let now = 0;
    for (let i = 0; i < 50; i++) {
      times.push(...sendTimes(planWindow(pacer, { nowMs: now, rate: 5, burst: 3, leadMs: 0, windowMs: 2_000 }, [{ batchId: 'a', wanted: 4 + (i % 7) }])));
      now = pacer.nextFreeMs + (i % 4 === 0 ? 5_000 : 0);
    }
    expect(maxInAnyWindow(times, 1_000)).toBeLessThanOrEqual(ceilings(5, 3).perSecond);
    expect(maxInAnyWindow(times, 1_000)).toBeGreaterThan(5); // the burst was actually used
  });

  it('counts a window as half-open', () => {
    expect(maxInAnyWindow([0, 1_000, 2_000], 1_000)).toBe(1);
    expect(maxInAnyWindow([0, 999, 2_000], 1_000)).toBe(2);
  });
});

describe('slowWindowFloatMs', () => {
  it('floats only windows whose slots are more than 20 s apart, by up to half the spacing', () => {
    expect(slowWindowFloatMs(1_031)).toBe(0); // 1 req/s
    expect(slowWindowFloatMs(10_309)).toBe(0); // a Crawl-delay of 10
    expect(slowWindowFloatMs(20_000)).toBe(0);
    expect(slowWindowFloatMs(30_928)).toBeCloseTo(10_928); // a Crawl-delay of 30
    expect(slowWindowFloatMs(103_092)).toBe(51_546); // 0.01 req/s
  });
});

describe('floatGrant', () => {
  const g = { startMs: 10_000, endMs: 40_000, floatMs: 15_000 };

  it('leaves a grant whose first slot is still ahead as it is', () => {
    expect(floatGrant(g, 9_000, 500)).toBe(g);
    expect(floatGrant({ startMs: 10_000, endMs: 40_000 }, 20_000, 500)).toEqual({ startMs: 10_000, endMs: 40_000 });
  });

  it('slides a late one whole, by no more than its float, which shrinks by as much', () => {
    expect(floatGrant(g, 14_500, 500)).toEqual({ startMs: 15_000, endMs: 45_000, floatMs: 10_000 });
    // Its window and what is left of its float end where the monitor's booking ends.
    const late = floatGrant(g, 60_000, 500);
    expect(late).toEqual({ startMs: 25_000, endMs: 55_000, floatMs: 0 });
    expect(late.endMs + late.floatMs).toBe(g.endMs + g.floatMs);
  });
});
