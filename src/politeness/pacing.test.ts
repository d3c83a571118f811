import { ceilings, fairShares, maxInAnyWindow, newPacerState, planWindow, slotTime, windowLengthMs } from './pacing';

function sendTimes(grants: ReturnType<typeof planWindow>): number[] {
  return grants.flatMap((g) => Array.from({ length: g.slots }, (_, j) => slotTime(g, j)));
}

describe('pacing', () => {
  it('shares slots fairly between batches, rotating the remainder', () => {
    expect(fairShares([{ batchId: 'a', wanted: 100 }, { batchId: 'b', wanted: 100 }], 10, 0)).toEqual([5, 5]);
    expect(fairShares([{ batchId: 'a', wanted: 2 }, { batchId: 'b', wanted: 100 }], 10, 0)).toEqual([2, 8]);
    expect(fairShares([{ batchId: 'a', wanted: 5 }, { batchId: 'b', wanted: 5 }, { batchId: 'c', wanted: 5 }], 2, 0)).toEqual([1, 1, 0]);
    expect(fairShares([{ batchId: 'a', wanted: 5 }, { batchId: 'b', wanted: 5 }, { batchId: 'c', wanted: 5 }], 2, 1)).toEqual([0, 1, 1]);
  });

  it('gives each grant a disjoint stretch of one timeline', () => {
    const pacer = newPacerState();
    const grants = planWindow(pacer, { nowMs: 1_000, rate: 10, burst: 0, leadMs: 300, windowMs: 2_000 },
      [{ batchId: 'a', wanted: 50 }, { batchId: 'b', wanted: 50 }]);
    expect(grants.map((g) => [g.batchId, g.slots, g.startMs, g.endMs])).toEqual([
      ['a', 10, 1_300, 2_300],
      ['b', 10, 2_300, 3_300],
    ]);
    expect(pacer.nextFreeMs).toBe(3_300);
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
