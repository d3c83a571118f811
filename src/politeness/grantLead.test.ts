import { Governor } from './governor';
import { grantLeadMs, learnDispatch, MAX_LEAD_MS } from './grantLead';

const T0 = Date.UTC(2026, 10, 23);

describe('grant lead learnt from how long grants take to reach their activity', () => {
  it('follows slower trips within a few grants, not one outlier at once, and comes down a share of the way with each faster one', () => {
    expect(learnDispatch(undefined, 120)).toBe(120);
    // Trips of 4 s on a busy worker: followed after three of them.
    let d = learnDispatch(120, 4_000);
    expect(d).toBe(1_240);
    d = learnDispatch(d, 4_000);
    expect(d).toBe(3_480);
    expect(learnDispatch(d, 4_000)).toBe(4_000);
    // One trip of 66 s (a batch's first grant behind a queue of new workflows) moves it by a second.
    expect(learnDispatch(300, 66_000)).toBe(1_600);
    expect(learnDispatch(4_000, 1_000)).toBeCloseTo(3_100);
    d = 4_000;
    for (let k = 0; k < 30; k++) d = learnDispatch(d, 100);
    expect(d).toBeLessThan(110);
    expect(learnDispatch(undefined, -50)).toBe(0);
    d = 0;
    for (let k = 0; k < 10; k++) d = learnDispatch(d, 10 * 60_000);
    expect(d).toBe(MAX_LEAD_MS);
  });

  it('keeps the configured lead until trips take longer than it, with a margin above the trip', () => {
    expect(grantLeadMs(300, undefined)).toBe(300);
    expect(grantLeadMs(300, 100)).toBe(300);
    expect(grantLeadMs(300, 4_000)).toBe(5_000);
    expect(grantLeadMs(300, MAX_LEAD_MS)).toBe(MAX_LEAD_MS);
  });

  it('starts windows a learnt trip ahead, so a small batch on a busy worker gets all its slots in one grant', () => {
    const g = Governor.create('small.example', { rate: 1 }, T0);
    const [first] = g.plan([{ batchId: 'b', wanted: 3 }], T0);
    expect(first!.startMs).toBe(T0 + 300);
    // Activities start 4 s after their grants were issued: three of five slots had passed.
    for (let k = 0; k < 3; k++) g.noteDispatch(4_000);
    const later = T0 + 60_000;
    const [next] = g.plan([{ batchId: 'b', wanted: 3 }], later);
    expect(next!.startMs).toBe(later + 5_000);
    expect(g.leadMs()).toBe(5_000);
  });

  it('plans the next window a lead before the timeline frees up, so a long lead leaves no gap between windows', () => {
    const g = Governor.create('busy.example', { rate: 10 }, T0);
    for (let k = 0; k < 4; k++) g.noteDispatch(8_000);
    const [a] = g.plan([{ batchId: 'b', wanted: 1_000 }], T0);
    const planAt = g.nextPlanAtMs();
    expect(planAt).toBeLessThanOrEqual(a!.endMs - 10_000);
    const [b] = g.plan([{ batchId: 'b', wanted: 1_000 }], planAt);
    expect(b!.startMs).toBe(a!.endMs);
  });
});
