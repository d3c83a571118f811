import { forEachLimit, fulfilsWithin, WeightedBudget } from './concurrency';

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

describe('WeightedBudget', () => {
  const tick = () => new Promise((r) => setTimeout(r, 5));

  it('never has more weight in use than its capacity, and admits in arrival order', async () => {
    const budget = new WeightedBudget(100);
    let most = 0;
    const order: string[] = [];
    const job = (name: string, weight: number) => budget.use(weight, async () => {
      order.push(name);
      most = Math.max(most, budget.inUse);
      await tick();
    });
    await Promise.all([job('a', 60), job('b', 60), job('c', 10), job('d', 30)]);
    expect(most).toBeLessThanOrEqual(100);
    // c would fit beside a, but b came first: nothing overtakes a waiting item.
    expect(order).toEqual(['a', 'b', 'c', 'd']);
    expect(budget.inUse).toBe(0);
  });

  it('runs an item heavier than the whole budget alone, and frees the weight when fn throws', async () => {
    const budget = new WeightedBudget(100);
    const events: string[] = [];
    const heavy = budget.use(500, async () => { events.push('heavy start'); await tick(); events.push('heavy end'); });
    const light = budget.use(1, async () => { events.push('light'); });
    await Promise.all([heavy, light]);
    expect(events).toEqual(['heavy start', 'heavy end', 'light']);
    await expect(budget.use(50, async () => { throw new Error('decode failed'); })).rejects.toThrow('decode failed');
    expect(budget.inUse).toBe(0);
    await budget.use(100, async () => { expect(budget.inUse).toBe(100); });
  });
});

describe('fulfilsWithin', () => {
  it('says whether a promise fulfilled in time, and passes a rejection on', async () => {
    expect(await fulfilsWithin(Promise.resolve(), 1_000)).toBe(true);
    expect(await fulfilsWithin(new Promise(() => undefined), 10)).toBe(false);
    await expect(fulfilsWithin(Promise.reject(new Error('gone')), 1_000)).rejects.toThrow('gone');
  });
});
