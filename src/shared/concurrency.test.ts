import { forEachLimit } from './concurrency';

describe('forEachLimit', () => {
  it('runs every item with at most `limit` in flight', async () => {
    let inFlight = 0;
    let most = 0;
    const seen: number[] = [];
    await forEachLimit([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise((r) => setTimeout(r, 5 + (n % 3)));
      seen.push(n);
      inFlight -= 1;
    });
    expect(seen.sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(most).toBe(3);
  });

  it('stops starting new items after a failure and rethrows it once the started ones settle', async () => {
    const started: number[] = [];
    let settled = 0;
    const run = forEachLimit([1, 2, 3, 4, 5, 6], 2, async (n) => {
      started.push(n);
      await new Promise((r) => setTimeout(r, 5));
      settled += 1;
      if (n === 2) throw new Error('boom 2');
    });
    await expect(run).rejects.toThrow('boom 2');
    expect(started.length).toBeLessThan(6);
    expect(settled).toBe(started.length);
  });
});
