import { FairSlots, forEachLimit, fulfilsWithin, WeightedBudget } from './concurrency';

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

describe('FairSlots', () => {
  /** A job that runs until the test ends it. */
  function jobs(slots: FairSlots) {
    const started: string[] = [];
    const ends = new Map<string, () => void>();
    const run = (key: string, name: string) => slots.use(key, () => new Promise<void>((end) => { started.push(name); ends.set(name, end); }));
    const end = async (name: string) => { ends.get(name)!(); await new Promise((r) => setImmediate(r)); };
    return { started, run, end };
  }

  it('gives a freed slot to the waiting key with the fewest in use, not to the one that queued first', async () => {
    const slots = new FairSlots(2);
    const { started, run, end } = jobs(slots);
    // A site of slow images queues four, then a site of quick ones two.
    const all = [run('slow', 's1'), run('slow', 's2'), run('slow', 's3'), run('slow', 's4'), run('quick', 'q1'), run('quick', 'q2')];
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(['s1', 's2']);
    await end('s1');
    expect(started).toEqual(['s1', 's2', 'q1']); // first come first served would have started s3
    await end('q1');
    expect(started).toEqual(['s1', 's2', 'q1', 'q2']);
    await end('q2');
    // Only the slow site waits now: it gets every free slot.
    expect(started).toEqual(['s1', 's2', 'q1', 'q2', 's3']);
    await end('s2');
    expect(started).toEqual(['s1', 's2', 'q1', 'q2', 's3', 's4']);
    expect(slots.inUse).toBe(2);
    await end('s3');
    await end('s4');
    await Promise.all(all);
    expect(slots.inUse).toBe(0);
  });

  it('takes equal waiters in arrival order, and frees the slot when fn throws', async () => {
    const slots = new FairSlots(1);
    const { started, run, end } = jobs(slots);
    const all = [run('a', 'a1'), run('b', 'b1'), run('c', 'c1'), run('a', 'a2')];
    await new Promise((r) => setImmediate(r));
    await end('a1');
    await end('b1');
    await end('c1');
    await end('a2');
    await Promise.all(all);
    expect(started).toEqual(['a1', 'b1', 'c1', 'a2']);
    await expect(slots.use('a', async () => { throw new Error('decode failed'); })).rejects.toThrow('decode failed');
    expect(slots.inUse).toBe(0);
  });
});

describe('fulfilsWithin', () => {
  it('says whether a promise fulfilled in time, and passes a rejection on', async () => {
    expect(await fulfilsWithin(Promise.resolve(), 1_000)).toBe(true);
    expect(await fulfilsWithin(new Promise(() => undefined), 10)).toBe(false);
    await expect(fulfilsWithin(Promise.reject(new Error('gone')), 1_000)).rejects.toThrow('gone');
  });
});
