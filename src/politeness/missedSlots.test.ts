import { slotsWithMissAllowance, tailGrantSlots, updateMissRate, windowStretch, workersBehindNote } from './missedSlots';

describe('missed-slot allowance', () => {
  it('follows the share of slots missed, weighting recent reports', () => {
    let m = 0;
    for (let i = 0; i < 20; i++) m = updateMissRate(m, 40, 60);
    expect(m).toBeCloseTo(0.4, 2);
    m = updateMissRate(m, 0, 100);
    expect(m).toBeCloseTo(0.28, 2);
    expect(updateMissRate(m, 0, 0)).toBe(m); // a report with no slots says nothing
  });

  it('plans enough slots that the wanted URLs fit despite the misses', () => {
    expect(slotsWithMissAllowance(60, 0)).toBe(62); // two spares: a couple of late wake-ups cost no round trip
    // 40% missed: 100 slots leave 60 sends.
    expect(slotsWithMissAllowance(60, 0.4)).toBe(100);
    expect(slotsWithMissAllowance(1, 0.05)).toBe(3);
  });

  it('never more than triples, and never plans slots for nothing', () => {
    expect(slotsWithMissAllowance(50, 0.9)).toBe(150);
    expect(slotsWithMissAllowance(0, 0.4)).toBe(0);
  });

  it('lengthens windows by the share of slots missed, at most threefold', () => {
    expect(windowStretch(0)).toBe(1);
    expect(windowStretch(0.5)).toBe(2);
    expect(windowStretch(0.9)).toBeCloseTo(3, 9);
    expect(windowStretch(-1)).toBe(1);
  });

  it('gives a source\'s last grant spare slots for a start up to 5 s late, or twice the lead', () => {
    expect(tailGrantSlots(1, 1031, 300)).toBe(1 + 5); // 1 req/s: five spare slots
    expect(tailGrantSlots(2, 250, 300)).toBe(2 + 20); // 4 req/s: 5 s is 20 slots
    expect(tailGrantSlots(1, 1031, 4_000)).toBe(1 + 8); // a learnt lead of 4 s: 8 s of spare
    expect(tailGrantSlots(1, 1031, 60_000)).toBe(1 + 15); // never more than the longest lead
    expect(tailGrantSlots(3, 20_000, 300)).toBe(3 + 2); // a slow source: the usual two
    expect(tailGrantSlots(0, 1031, 300)).toBe(0);
  });
});

describe('a source the workers cannot keep up with', () => {
  it('is told from 30% of its recent slots missed, with the rate it gets', () => {
    expect(workersBehindNote(10, 0.29)).toBeUndefined();
    expect(workersBehindNote(10, undefined)).toBeUndefined();
    expect(workersBehindNote(0.5, 0.3)).toMatch(/^workers behind: 30% of its recent slots passed unsent, so it gets about 0\.35\/s of its 0\.5\/s /);
  });
});
