import { Governor, DEFAULT_GOVERNOR } from './governor';
import { maxInAnyWindow, slotTime } from './pacing';

const T0 = Date.UTC(2026, 10, 23);

describe('Governor and a robots.txt Crawl-delay', () => {
  it('lowers the rate and the target to the delay at once, drops the burst, and keeps every later rate under it', () => {
    const g = Governor.create('site.example', { rate: 10, burst: 3 }, T0);
    const events = g.applyReport({ batchId: 'b', grantId: 1, outcomes: [], unused: 40, crawlDelayMs: 2_000 }, T0);
    expect(events).toEqual([{ event: 'crawl-delay', detail: expect.stringMatching(/^robots\.txt asks for 2 s between requests: rate at most 0\.50\/s, no burst$/) }]);
    expect(g.state).toMatchObject({ target: 0.5, burst: 0, siteMaxRate: 0.5 });
    expect(g.rate).toBe(0.5);
    // An operator's rate and burst cannot take the source past what the site asked for.
    g.setRate(20, 5, T0);
    expect(g.state).toMatchObject({ target: 0.5, burst: 0 });
    g.resume(T0, 8);
    expect(g.rate).toBe(0.5);
    // The request that read robots.txt counts: nothing is granted for the delay after it.
    expect(g.canGrant(T0 + 1_999)).toBe(false);
    // Granted slots are at least the delay apart, none at once.
    const grants = g.plan([{ batchId: 'b', wanted: 100 }], T0 + 2_000);
    expect(grants.length).toBeGreaterThan(0);
    for (const grant of grants) {
      expect(grant.intervalMs).toBeGreaterThanOrEqual(2_000);
      expect(grant.burstSlots).toBe(0);
    }
  });

  it('does not raise a rate already below the delay, and ramps back up no further than it', () => {
    const g = Governor.create('slow.example', { rate: 0.2 }, T0, DEFAULT_GOVERNOR);
    g.applyReport({ batchId: 'b', grantId: 1, outcomes: [], unused: 0, crawlDelayMs: 1_000 }, T0);
    expect(g.state.target).toBe(0.2);
    expect(g.rate).toBe(0.2);
    const h = Governor.create('fast.example', { rate: 50 }, T0);
    h.applyReport({ batchId: 'b', grantId: 1, outcomes: [], unused: 0, retryAfterMs: 1_000 }, T0);
    h.applyReport({ batchId: 'b', grantId: 2, outcomes: [], unused: 0, crawlDelayMs: 250 }, T0 + 1);
    for (let t = T0; t < T0 + 30 * 60_000; t += 10_000) h.applyReport({ batchId: 'b', grantId: 3, outcomes: [], unused: 0 }, t);
    expect(h.rate).toBe(4);
  });
});

describe('Governor: the first request at a Crawl-delay cap', () => {
  it('waits the delay after the last slot booked at the faster rate, where other batches may still send at the host\'s pace', () => {
    const booked = () => {
      const g = Governor.create('site.example', { rate: 10 }, T0);
      // A new source's first window, shared by two batches: a's stretch, then b's.
      const [a, b] = g.plan([{ batchId: 'a', wanted: 50 }, { batchId: 'b', wanted: 50 }], T0);
      expect(b!.startMs).toBe(a!.endMs);
      return { g, a: a!, b: b! };
    };
    const at = (g: Governor, t: number) => g.canGrant(t);
    // a reports the delay while b's stretch is still to come.
    const { g, a, b } = booked();
    g.applyReport({ batchId: 'a', grantId: a.grantId, outcomes: [], unused: 40, crawlDelayMs: 1_000, windowTail: { endMs: a.endMs, lastSendMs: a.startMs + 4_000 } }, a.endMs, { crawlDelayAfterBooked: () => true });
    expect(at(g, b.endMs + 999)).toBe(false);
    expect(at(g, b.endMs + 1_000)).toBe(true);
    expect(g.plan([{ batchId: 'a', wanted: 10 }], b.endMs + 1_000)[0]!.startMs).toBeGreaterThanOrEqual(b.endMs + 1_000);
    // Without the patch (histories from before it): the delay after the report only.
    const old = booked();
    old.g.applyReport({ batchId: 'a', grantId: old.a.grantId, outcomes: [], unused: 40, crawlDelayMs: 1_000 }, old.a.endMs, { crawlDelayAfterBooked: () => false });
    expect(at(old.g, old.a.endMs + 1_000)).toBe(true);
    // The last booked stretch's own report: nothing booked after it, so the delay after the
    // report (which comes once its last request has ended), not after the stretch's end.
    const last = booked();
    last.g.applyReport({ batchId: 'b', grantId: last.b.grantId, outcomes: [], unused: 40, crawlDelayMs: 1_000, windowTail: { endMs: last.b.endMs, lastSendMs: last.b.endMs - 3_000 } }, last.b.endMs - 2_500, { crawlDelayAfterBooked: () => true });
    expect(at(last.g, last.b.endMs - 1_501)).toBe(false);
    expect(at(last.g, last.b.endMs - 1_500)).toBe(true);
    const none = booked();
    none.g.applyReport({ batchId: 'b', grantId: none.b.grantId, outcomes: [], unused: 40, crawlDelayMs: 1_000 }, none.b.startMs, { crawlDelayAfterBooked: () => true });
    expect(at(none.g, none.b.endMs + 999)).toBe(false);
  });
});

describe('Governor and a Crawl-delay cap on a source spanning hosts', () => {
  const report = (batchId: string, extra: object) => ({ batchId, grantId: 1, outcomes: [], unused: 0, ...extra });
  const lift = () => true;

  it('keeps the cap while a batch holds only the delayed host\'s URLs, and lifts it once none does and a grant reaches another host', () => {
    const g = Governor.create('museum.example', { rate: 10, burst: 2 }, T0);
    g.applyReport(report('x', { crawlDelayMs: 2_000 }), T0, { liftCrawlDelay: lift });
    expect(g.state).toMatchObject({ siteMaxRate: 0.5, target: 0.5, burst: 0 });
    // Another batch reaches a host without a delay, but x still has only the delayed host's URLs.
    expect(g.applyReport(report('y', { leastHostDelayMs: 0 }), T0 + 10_000, { liftCrawlDelay: lift })).toEqual([]);
    g.applyReport(report('x', { leastHostDelayMs: 2_000 }), T0 + 20_000, { liftCrawlDelay: lift });
    expect(g.state.siteMaxRate).toBe(0.5);
    // x ends; that alone says nothing of the hosts still to come.
    g.batchEnded('x');
    expect(g.state.siteMaxRate).toBe(0.5);
    const events = g.applyReport(report('y', { leastHostDelayMs: 0 }), T0 + 30_000, { liftCrawlDelay: lift });
    expect(events).toEqual([{ event: 'crawl-delay', detail: expect.stringMatching(/at most 0\.50\/s no longer, back to 10\/s$/) }]);
    expect(g.state.siteMaxRate).toBeUndefined();
    // The other hosts start as a new source would: nothing slowed them.
    expect(g.state).toMatchObject({ target: 10, burst: 2 });
    expect(g.rate).toBe(10);
    // Grants of the delayed host's URLs alone bring the cap back.
    g.applyReport(report('z', { crawlDelayMs: 2_000 }), T0 + 40_000, { liftCrawlDelay: lift });
    expect(g.state).toMatchObject({ siteMaxRate: 0.5, crawlDelayHolders: ['z'] });
  });

  it('lets a rate that something else lowered under the cap ramp back, not jump', () => {
    const g = Governor.create('museum.example', { rate: 10 }, T0);
    g.applyReport(report('x', { crawlDelayMs: 2_000 }), T0, { liftCrawlDelay: lift });
    g.applyReport(report('y', { retryAfterMs: 5_000, outcomes: [{ url: '', cls: 'error', status: 429, sent: true, final: false, attempt: 1 }] }), T0 + 5_000);
    const slowed = g.rate;
    expect(slowed).toBeLessThan(0.5);
    g.batchEnded('x');
    const events = g.applyReport(report('y', { leastHostDelayMs: 0 }), T0 + 20_000, { liftCrawlDelay: lift });
    expect(events.map((e) => e.detail)).toEqual([expect.stringMatching(/ramping up to 10\/s$/)]);
    expect(g.state.target).toBe(10);
    expect(g.rate).toBeLessThan(1);
  });

  it('never lifts the cap of a source whose grants reach only the delayed host, nor without the monitor\'s leave', () => {
    const g = Governor.create('one-host.example', { rate: 10 }, T0);
    g.applyReport(report('x', { crawlDelayMs: 1_000 }), T0, { liftCrawlDelay: lift });
    for (let k = 1; k <= 5; k++) g.applyReport(report(k % 2 ? 'x' : 'y', { leastHostDelayMs: 1_000 }), T0 + k * 10_000, { liftCrawlDelay: lift });
    g.batchEnded('x');
    g.applyReport(report('y', { leastHostDelayMs: 1_000 }), T0 + 60_000, { liftCrawlDelay: lift });
    expect(g.state.siteMaxRate).toBe(1);
    // A history from before the lift replays without it.
    const h = Governor.create('old.example', { rate: 10 }, T0);
    h.applyReport(report('x', { crawlDelayMs: 1_000 }), T0);
    h.batchEnded('x');
    h.applyReport(report('y', { leastHostDelayMs: 0 }), T0 + 10_000);
    expect(h.state.siteMaxRate).toBe(1);
  });
});

describe('Governor and a global ceiling set while it runs', () => {
  it('caps the target and the rate at once, ramps back up when it is raised, and keeps the source\'s own rate and the site\'s limit', () => {
    const g = Governor.create('big.example', { rate: 40 }, T0);
    g.setCeiling(10, T0);
    expect(g.state.target).toBe(10);
    expect(g.rate).toBe(10);
    expect(g.cfg.globalCeiling).toBe(10);
    expect(DEFAULT_GOVERNOR.globalCeiling).toBeUndefined();
    // An operator's set-rate stays under it.
    g.setRate(30, undefined, T0);
    expect(g.state.target).toBe(10);
    // Lifted: the target is the source's own rate again (set-rate's 30), reached by ramping.
    g.setCeiling(undefined, T0 + 1_000);
    expect(g.state.target).toBe(30);
    expect(g.rate).toBe(10);
    expect(g.state.slowedBy).toEqual({ by: 'the global ceiling of 10/s before', atMs: T0 + 1_000 });
    g.tick(T0 + 60_000);
    expect(g.rate).toBeGreaterThan(10);
    expect(g.rate).toBeLessThanOrEqual(30);
    // Once at the target, nothing is said of what slowed it.
    g.tick(T0 + 1_000 + 180_000);
    expect(g.rate).toBe(30);
    expect(g.state.slowedBy).toBeUndefined();
    // Never above what the site's robots.txt asks for.
    g.applyCrawlDelay(1_000, T0 + 61_000);
    g.setCeiling(50, T0 + 62_000);
    expect(g.state.target).toBe(1);
  });
});

describe('Governor and a catalogue entry given again with more work', () => {
  it('takes a changed entry, a lower target at once and a higher one by the ramp, and leaves an unchanged one and an operator\'s rate alone', () => {
    const g = Governor.create('museum.example', { rate: 5 }, T0);
    // The entry the source started with, given again (the next manifest, the same catalogue): nothing.
    expect(g.takeCatalogEntry({ rate: 5 }, T0)).toBeUndefined();
    // Lowered in the catalogue: at once.
    expect(g.takeCatalogEntry({ rate: 1, burst: 0 }, T0 + 1_000)).toEqual({ event: 'catalogue-entry', detail: 'changed to rate 1, burst 0: target 1.00/s, burst 0 (was 5.00/s)' });
    expect(g.state).toMatchObject({ target: 1, burst: 0 });
    expect(g.rate).toBe(1);
    // A request every few hours reads as such, not as 0.00/s.
    expect(g.setRate(0.0001, undefined, T0 + 1_500)).toEqual({ event: 'rate-set', detail: 'target 0.0001/s burst 0' });
    // An operator's set-rate since then stands while the catalogue says the same as before.
    g.setRate(0.5, undefined, T0 + 2_000);
    expect(g.takeCatalogEntry({ rate: 1, burst: 0 }, T0 + 3_000)).toBeUndefined();
    expect(g.state.target).toBe(0.5);
    // Raised, with a burst: the target at once, the rate by the ramp, saying why it is below.
    expect(g.takeCatalogEntry({ rate: 4, burst: 2 }, T0 + 4_000)?.detail).toBe('changed to rate 4, burst 2: target 4.00/s, burst 2 (was 0.50/s)');
    expect(g.state).toMatchObject({ target: 4, burst: 2, slowedBy: { by: 'its catalogue entry\'s earlier 0.50/s', atMs: T0 + 4_000 } });
    expect(g.rate).toBe(0.5);
    g.tick(T0 + 4_000 + 180_000);
    expect(g.rate).toBe(4);
    // An entry without a rate: the source's size decides again (1/s up to 5,000 images).
    expect(g.takeCatalogEntry({ imageCount: 1_000 }, T0 + 200_000)?.detail).toBe('changed to imageCount 1000: target 1.00/s, burst 0 (was 4.00/s)');
    expect(g.rate).toBe(1);
  });

  it('takes a changed maxConnections alone, keeps it through an operator\'s set-rate, and drops it with an entry that has none', () => {
    const g = Governor.create('museum.example', { rate: 5 }, T0);
    expect(g.takeCatalogEntry({ rate: 5, maxConnections: 2 }, T0)?.detail).toBe('changed to rate 5, maxConnections 2: target 5.00/s, burst 0 (was 5.00/s)');
    expect(g.state.sourceConfig.maxConnections).toBe(2);
    g.setRate(3, undefined, T0 + 1_000);
    expect(g.state.sourceConfig).toEqual({ rate: 3, maxConnections: 2 });
    expect(g.takeCatalogEntry({ rate: 5, maxConnections: 2 }, T0 + 2_000)).toBeUndefined();
    expect(g.takeCatalogEntry({ rate: 5 }, T0 + 3_000)?.detail).toBe('changed to rate 5: target 5.00/s, burst 0 (was 3.00/s)');
    expect(g.state.sourceConfig.maxConnections).toBeUndefined();
  });

  it('takes an operator\'s maxConnections (crawl set-max-connections), which an unchanged catalogue entry leaves in place', () => {
    const g = Governor.create('museum.example', { rate: 5, maxConnections: 4 }, T0);
    expect(g.setMaxConnections(2)).toEqual({ event: 'max-connections', detail: 'at most 2 requests open at once (was 4)' });
    expect(g.state.sourceConfig).toEqual({ rate: 5, maxConnections: 2 });
    expect(g.takeCatalogEntry({ rate: 5, maxConnections: 4 }, T0 + 1_000)).toBeUndefined();
    expect(g.state.sourceConfig.maxConnections).toBe(2);
    expect(g.setMaxConnections(null)).toEqual({ event: 'max-connections', detail: 'no limit of its own on requests open at once (was 2)' });
    expect(g.state.sourceConfig).toEqual({ rate: 5 });
    // A changed entry is the operator's new word again.
    expect(g.takeCatalogEntry({ rate: 5, maxConnections: 3 }, T0 + 2_000)?.detail).toBe('changed to rate 5, maxConnections 3: target 5.00/s, burst 0 (was 5.00/s)');
    expect(g.state.sourceConfig.maxConnections).toBe(3);
  });

  it('stays under a global ceiling and the site\'s Crawl-delay, as any rate does', () => {
    const g = Governor.create('big.example', { rate: 2 }, T0, { ...DEFAULT_GOVERNOR, globalCeiling: 10 });
    g.takeCatalogEntry({ rate: 40 }, T0);
    expect(g.state.target).toBe(10);
    g.applyCrawlDelay(1_000, T0 + 1_000);
    g.takeCatalogEntry({ rate: 8, burst: 3 }, T0 + 2_000);
    expect(g.state).toMatchObject({ target: 1, burst: 0 });
  });
});

describe('Governor and a --max-rate given again with more work', () => {
  it('takes a changed ceiling as set-max-rate would, and leaves an unchanged one and a set-max-rate made since alone', () => {
    const g = Governor.create('big.example', { rate: 40 }, T0);
    expect(g.takeGivenCeiling(10, T0)).toEqual({ event: 'max-rate', detail: '--max-rate changed to 10/s (was none): global ceiling 10/s; target 10/s' });
    expect(g.rate).toBe(10);
    g.setCeiling(5, T0 + 1_000);
    expect(g.takeGivenCeiling(10, T0 + 2_000)).toBeUndefined();
    expect(g.state.target).toBe(5);
    // Raised: the target at once, the rate by the ramp.
    expect(g.takeGivenCeiling(20, T0 + 3_000)?.detail).toBe('--max-rate changed to 20/s (was 10/s): global ceiling 20/s; target 20/s');
    expect(g.rate).toBe(5);
    const started = Governor.create('capped.example', { rate: 40 }, T0, { ...DEFAULT_GOVERNOR, globalCeiling: 8 });
    expect(started.takeGivenCeiling(8, T0)).toBeUndefined();
  });
});

describe('Governor and a --max-retry-after given with more work', () => {
  const throttle = (g: Governor, retryAfterMs: number, atMs: number) =>
    g.applyReport({ batchId: 'b', grantId: 1, unused: 0, outcomes: [{ url: '', cls: 'error', status: 429, sent: true, final: false, attempt: 1, retryAfterMs, atMs }] }, atMs);

  it('ends a Retry-After hold that outlasts the new cap from now, and lengthens none', () => {
    const g = Governor.create('slow.example', { rate: 4 }, T0);
    throttle(g, 3_600_000, T0);
    // Held for the default cap of 15 min.
    expect(g.state.adaptive.holdUntilMs).toBe(T0 + 900_000);
    expect(g.takeMaxRetryAfter(120_000, T0 + 60_000)).toEqual({
      event: 'max-retry-after', detail: `--max-retry-after changed to 120 s (was 900 s); the Retry-After hold now ends at ${new Date(T0 + 180_000).toISOString()}`,
    });
    expect(g.canGrant(T0 + 179_999)).toBe(false);
    expect(g.canGrant(T0 + 180_000)).toBe(true);
    // The ramp back starts at the hold's new end, not its old one.
    g.tick(T0 + 180_000 + 45_000);
    expect(g.rate).toBeCloseTo(2 + (4 / 180) * 45, 5);
    // Unchanged: nothing. A longer cap: the next Retry-After may be longer; the hold now is not.
    expect(g.takeMaxRetryAfter(120_000, T0 + 200_000)).toBeUndefined();
    throttle(g, 3_600_000, T0 + 300_000);
    expect(g.state.adaptive.holdUntilMs).toBe(T0 + 420_000);
    expect(g.takeMaxRetryAfter(600_000, T0 + 310_000)?.detail).toBe('--max-retry-after changed to 600 s (was 120 s)');
    expect(g.state.adaptive.holdUntilMs).toBe(T0 + 420_000);
    throttle(g, 3_600_000, T0 + 500_000);
    expect(g.state.adaptive.holdUntilMs).toBe(T0 + 1_100_000);
  });

  it('takes crawl set-max-retry-after at once, and a later start changes it only with a changed cap', () => {
    const g = Governor.create('slow.example', { rate: 4 }, T0);
    throttle(g, 3_600_000, T0);
    expect(g.setMaxRetryAfter(60_000, T0 + 30_000)).toEqual({
      event: 'max-retry-after', detail: `longest Retry-After honoured set to 60 s (was 900 s); the Retry-After hold now ends at ${new Date(T0 + 90_000).toISOString()}`,
    });
    expect(g.canGrant(T0 + 90_000)).toBe(true);
    expect(g.cfg.adaptive.maxRetryAfterMs).toBe(60_000);
    // The same --max-retry-after the crawl was started with (the default here) leaves it...
    expect(g.takeMaxRetryAfter(900_000, T0 + 100_000)).toBeUndefined();
    throttle(g, 3_600_000, T0 + 100_000);
    expect(g.state.adaptive.holdUntilMs).toBe(T0 + 160_000);
    // ...a changed one replaces it, and says what was in force.
    expect(g.takeMaxRetryAfter(30_000, T0 + 110_000)?.detail).toBe(`--max-retry-after changed to 30 s (was 60 s); the Retry-After hold now ends at ${new Date(T0 + 140_000).toISOString()}`);
    expect(g.setMaxRetryAfter(300_000, T0 + 120_000).detail).toBe('longest Retry-After honoured set to 300 s (was 30 s)');
    expect(g.takeMaxRetryAfter(30_000, T0 + 130_000)).toBeUndefined();
    expect(g.cfg.adaptive.maxRetryAfterMs).toBe(300_000);
  });

  it('leaves a hold for robots.txt or the store alone', () => {
    const g = Governor.create('site.example', { rate: 4 }, T0);
    g.applyReport({ batchId: 'b', grantId: 1, outcomes: [], unused: 40, robotsRetryMs: 300_000 }, T0);
    g.takeMaxRetryAfter(10_000, T0);
    expect(g.canGrant(T0 + 299_999)).toBe(false);
  });
});

describe('Governor and an unreadable robots.txt', () => {
  it('grants nothing until robots.txt is asked again, and leaves the rate as it was', () => {
    const g = Governor.create('site.example', { rate: 10 }, T0);
    const events = g.applyReport({ batchId: 'b', grantId: 1, outcomes: [], unused: 40, robotsRetryMs: 300_000 }, T0);
    expect(events).toEqual([{ event: 'robots-unavailable', detail: 'robots.txt cannot be read; asked again in 300 s, nothing sent until then' }]);
    expect(g.rate).toBe(10);
    expect(g.canGrant(T0 + 299_999)).toBe(false);
    expect(g.plan([{ batchId: 'b', wanted: 10 }], T0 + 299_999)).toEqual([]);
    // A second batch reporting the same wait adds no event; the hold is not shortened.
    expect(g.applyReport({ batchId: 'b2', grantId: 2, outcomes: [], unused: 40, robotsRetryMs: 100_000 }, T0 + 1_000)).toEqual([]);
    expect(g.canGrant(T0 + 300_000)).toBe(true);
    expect(g.plan([{ batchId: 'b', wanted: 10 }], T0 + 300_000).length).toBeGreaterThan(0);
    expect(g.rate).toBe(10);
  });
});

describe('Governor and a failing store', () => {
  it('grants nothing for the wait the report asks, says what the store answered, and leaves the rate as it was', () => {
    const g = Governor.create('site.example', { rate: 10 }, T0);
    const events = g.applyReport({ batchId: 'b', grantId: 1, outcomes: [], unused: 40, storeRetryMs: 60_000, storeError: 'ENOSPC: no space left on device' }, T0);
    expect(events).toEqual([{ event: 'store-unavailable', detail: 'the store failed (ENOSPC: no space left on device); nothing sent for 60 s, the URLs keep their attempts' }]);
    expect(g.canGrant(T0 + 59_999)).toBe(false);
    expect(g.state.adaptive.holdReason).toBe('store');
    expect(g.canGrant(T0 + 60_000)).toBe(true);
    expect(g.rate).toBe(10);
    expect(g.state.counts).toMatchObject({ error: 0, retries: 0 });
  });
});

describe('Governor: a source\'s first window', () => {
  const slotsOf = (grants: { slots: number }[]) => grants.reduce((s, g) => s + g.slots, 0);

  it('is at most 10 s, so a slow source reports (and shows progress) after ~10 s rather than 40-60 s', () => {
    const g = Governor.create('slow.example', { rate: 1 }, T0);
    const first = g.plan([{ batchId: 'b', wanted: 1_000 }], T0, 1, true);
    // 1 req/s less the pacing margin: ~10 slots instead of the usual ~40.
    expect(slotsOf(first)).toBeGreaterThanOrEqual(9);
    expect(slotsOf(first)).toBeLessThanOrEqual(10);
    expect(g.isFirstWindow()).toBe(false);
    const second = g.plan([{ batchId: 'b', wanted: 1_000 }], g.nextPlanAtMs(), 1, true);
    expect(slotsOf(second)).toBeGreaterThanOrEqual(38);
  });

  it('tells whether a number of slots fits in one usual window (about 40 at any rate, more when stretched)', () => {
    const g = Governor.create('slow.example', { rate: 1 }, T0);
    expect(g.fitsInOneWindow(38)).toBe(true);
    expect(g.fitsInOneWindow(42)).toBe(false);
    expect(g.fitsInOneWindow(42, 1.5)).toBe(true);
    expect(Governor.create('fast.example', { rate: 50 }, T0).fitsInOneWindow(480)).toBe(true);
  });

  it('keeps the usual window without the patch, and for a source whose usual window is 10 s already', () => {
    const old = Governor.create('slow.example', { rate: 1 }, T0);
    expect(slotsOf(old.plan([{ batchId: 'b', wanted: 1_000 }], T0))).toBeGreaterThanOrEqual(38);
    const fast = Governor.create('fast.example', { rate: 20 }, T0);
    const usual = Governor.create('fast.example', { rate: 20 }, T0);
    expect(slotsOf(fast.plan([{ batchId: 'b', wanted: 1_000 }], T0, 1, true))).toBe(slotsOf(usual.plan([{ batchId: 'b', wanted: 1_000 }], T0)));
  });
});

describe('Governor: the unused end of a finished grant\'s window', () => {
  const sends = (g: { startMs: number; intervalMs: number; burstSlots: number }, n: number) => Array.from({ length: n }, (_, j) => slotTime(g, j));

  it('goes back to the timeline once the grant\'s activity has returned, so the next window opens one spacing after its last request', () => {
    const g = Governor.create('slow.example', { rate: 1 }, T0);
    const [first] = g.plan([{ batchId: 'b', wanted: 8 }], T0);
    expect(first!.slots).toBe(8);
    // Three of the eight slots served requests; the activity returned at the fourth.
    const lastSend = slotTime(first!, 2);
    expect(g.reclaimWindowTail(first!.endMs, lastSend)).toBe(true);
    const now = lastSend + 500;
    expect(g.nextPlanAtMs()).toBeLessThanOrEqual(now);
    const [next] = g.plan([{ batchId: 'b', wanted: 5 }], now);
    expect(next!.startMs).toBeCloseTo(lastSend + first!.intervalMs, 6);
    expect(next!.startMs).toBeLessThan(first!.endMs);
    // At most ceil(rate) requests in any second, across both grants.
    expect(maxInAnyWindow([...sends(first!, 3), ...sends(next!, 5)], 1_000)).toBe(1);
  });

  it('stays taken when a later window was planned after the grant, or the activity sent in its last slot', () => {
    const g = Governor.create('two.example', { rate: 1 }, T0);
    const [a] = g.plan([{ batchId: 'a', wanted: 4 }], T0);
    const [b] = g.plan([{ batchId: 'b', wanted: 4 }], g.nextPlanAtMs());
    expect(b!.startMs).toBe(a!.endMs);
    expect(g.reclaimWindowTail(a!.endMs, slotTime(a!, 0))).toBe(false);
    expect(g.state.pacer.nextFreeMs).toBe(b!.endMs);
    expect(g.reclaimWindowTail(b!.endMs, slotTime(b!, 3))).toBe(false);
    expect(g.state.pacer.nextFreeMs).toBe(b!.endMs);
  });
});

describe('Governor: a floating first grant', () => {
  it('books the float after the last window only, and a slid window\'s tail comes back as any other', () => {
    const g = Governor.create('float.example', { rate: 1 }, T0);
    const [a] = g.plan([{ batchId: 'a', wanted: 8 }], T0);
    expect(g.bookFloat(a!.endMs - 1, 15_000)).toBe(false); // not the last window's end
    expect(g.bookFloat(a!.endMs, 15_000)).toBe(true);
    expect(g.state.pacer.nextFreeMs).toBe(a!.endMs + 15_000);
    // The batch started 4 s late and slid the window; it sent in all 8 slots and reports the booked end.
    const slid = { ...a!, startMs: a!.startMs + 4_000, endMs: a!.endMs + 4_000 };
    expect(g.reclaimWindowTail(a!.endMs + 15_000, slotTime(slid, 7))).toBe(true);
    const [next] = g.plan([{ batchId: 'a', wanted: 3 }], g.nextPlanAtMs());
    expect(next!.startMs).toBeCloseTo(slotTime(slid, 7) + a!.intervalMs, 6);
    expect(maxInAnyWindow([...Array.from({ length: 8 }, (_, j) => slotTime(slid, j)), ...Array.from({ length: 3 }, (_, j) => slotTime(next!, j))], 1_000)).toBe(1);
  });
});

describe('Governor: an operator\'s pause and resume around a temporary halt', () => {
  /** 30 requests in a second, 4 failed: over 10% of the window, so the source cools down at T0. */
  const cooling = () => {
    const g = Governor.create('flaky.example', { rate: 10 }, T0);
    const outcomes = Array.from({ length: 30 }, (_, i) => ({ url: `u${i}`, cls: i < 4 ? 'error' as const : 'done' as const, status: i < 4 ? 500 : 200, sent: true, final: true, attempt: 1, atMs: T0 }));
    g.applyReport({ batchId: 'b', grantId: 1, outcomes, unused: 0 }, T0);
    expect(g.state.mode).toBe('cooling');
    return g;
  };
  const coolEnd = T0 + DEFAULT_GOVERNOR.breaker.coolDownMs;

  it('keeps the temporary halt through pause and resume: nothing granted until its end, then the reduced rate', () => {
    const g = cooling();
    g.pause();
    const resumed = g.resume(T0 + 5_000);
    expect(resumed.detail).toBe(`by operator; the temporary halt goes on until ${new Date(coolEnd).toISOString()}`);
    expect(g.state.mode).toBe('cooling');
    expect(g.canGrant(coolEnd - 1)).toBe(false);
    expect(g.plan([{ batchId: 'b', wanted: 10 }], coolEnd - 1)).toEqual([]);
    expect(g.tick(coolEnd)).toEqual([{ event: 'resumed', detail: 'after temporary halt at 5.00/s' }]);
    expect(g.canGrant(coolEnd)).toBe(true);
    expect(g.rate).toBe(5);
  });

  it('resume alone does not end a temporary halt either', () => {
    const g = cooling();
    g.resume(T0 + 1_000);
    expect(g.state.mode).toBe('cooling');
    expect(g.canGrant(T0 + 1_000)).toBe(false);
  });

  it('resumes at the reduced rate when the halt ended during the pause, and at an operator\'s rate as given', () => {
    const g = cooling();
    g.pause();
    expect(g.tick(coolEnd + 10_000)).toEqual([]); // paused: the halt's end passes unnoticed
    g.resume(coolEnd + 20_000);
    expect(g.state).toMatchObject({ mode: 'running' });
    expect(g.state.pausedWhileCooling).toBeUndefined();
    expect(g.rate).toBe(5);
    const h = cooling();
    h.pause();
    h.resume(coolEnd + 20_000, 8);
    expect(h.rate).toBe(8);
  });

  it('keeps a running source\'s error counts, so resuming cannot hide a failing site from the breaker', () => {
    const g = Governor.create('site.example', { rate: 10 }, T0);
    const errors = Array.from({ length: 12 }, (_, i) => ({ url: `u${i}`, cls: 'error' as const, status: 503, sent: true, final: false, attempt: 1, atMs: T0 }));
    g.applyReport({ batchId: 'b', grantId: 1, outcomes: errors.slice(0, 6), unused: 0 }, T0);
    g.resume(T0 + 100);
    expect(g.state.breaker.consecutiveErrors).toBe(6);
    expect(g.state.breaker.buckets.reduce((n, b) => n + b.errors, 0)).toBe(6);
  });

  it('lifts a permanent halt with a fresh breaker, paused or not', () => {
    for (const pauseFirst of [false, true]) {
      const g = Governor.create('down.example', { rate: 10 }, T0);
      const failures = Array.from({ length: 50 }, (_, i) => ({ url: `u${i}`, cls: 'error' as const, status: 502, sent: true, final: false, attempt: 1, atMs: T0 + i * 2_000 }));
      for (const o of failures) g.applyReport({ batchId: 'b', grantId: 1, outcomes: [o], unused: 0 }, o.atMs);
      expect(g.state.mode).toBe('halted');
      if (pauseFirst) g.pause();
      g.resume(T0 + 200_000);
      expect(g.state).toMatchObject({ mode: 'running', haltReason: null });
      expect(g.state.breaker.consecutiveErrors).toBe(0);
      expect(g.canGrant(T0 + 200_000)).toBe(true);
    }
  });

  it('names the last failure in a halt after 50 failed requests: a wall of 403s reads as one', () => {
    const g = Governor.create('hotlink.example', { rate: 10 }, T0);
    const failures = Array.from({ length: 50 }, (_, i) => ({ url: `u${i}`, cls: 'error' as const, status: 403, reason: 'http 403', sent: true, final: false, attempt: 1, atMs: T0 + i * 2_000 }));
    for (const o of failures) g.applyReport({ batchId: 'b', grantId: 1, outcomes: [o], unused: 0 }, o.atMs);
    expect(g.state).toMatchObject({ mode: 'halted', haltReason: 'the last 50 requests all failed (the last: http 403)' });
  });

  it('without the patch (a history from before it) ends the temporary halt and clears the breaker, as it did', () => {
    const g = cooling();
    g.pause(false);
    g.resume(T0 + 5_000, undefined, false);
    expect(g.state.mode).toBe('running');
    expect(g.canGrant(T0 + 5_000)).toBe(true);
    expect(g.state.breaker.buckets).toEqual([]);
  });
});

describe('Governor: pages where images were asked for', () => {
  type Cls = 'done' | 'content' | 'linkrot' | 'error';
  const outcome = (i: number, cls: Cls, page = false, final = true, reason = 'not an image: an HTML page') => ({
    url: `u${i}`, cls, status: cls === 'linkrot' ? 404 : 200, sent: true, final, attempt: 1, atMs: T0 + i * 100, ...(page ? { page: true as const, reason } : {}),
  });
  const report = (g: Governor, outcomes: ReturnType<typeof outcome>[], atMs = T0) => g.applyReport({ batchId: 'b', grantId: 1, outcomes, unused: 0 }, atMs);
  const pages = (from: number, n: number) => Array.from({ length: n }, (_, i) => outcome(from + i, 'content', true));

  it('halts for good after 50 pages in a row following images, saying how many images came first', () => {
    const g = Governor.create('waf.example', { rate: 20 }, T0);
    report(g, Array.from({ length: 59 }, (_, i) => outcome(i, 'done')));
    report(g, pages(59, 49));
    expect(g.state.mode).toBe('running');
    const events = report(g, pages(108, 1));
    expect(g.state.mode).toBe('halted');
    const reason = 'its last 50 answers were not images but web pages (HTML, JSON or text), empty bodies, endless redirects or 4xx refusals (the last: not an image: an HTML page), ' +
      'after 59 images: likely a block, login or cookie wall answering in their place';
    expect(g.state.haltReason).toBe(reason);
    expect(events).toEqual([{ event: 'halted', detail: reason }]);
    expect(g.canGrant(T0 + 60_000)).toBe(false);
  });

  it('counts apart the content errors an earlier crawl recorded, which a chunk taken up after a stop reports unsent with attempt 0', () => {
    const g = Governor.create('again.example', { rate: 5 }, T0);
    const earlier = Array.from({ length: 50 }, (_, i) => ({ ...outcome(i, 'content'), url: '', sent: false, attempt: 0 }));
    report(g, [...earlier, outcome(50, 'content'), outcome(51, 'content', true)]);
    expect([g.state.counts.content, g.state.pages, g.state.contentBefore, g.state.mode]).toEqual([52, 1, 50, 'running']);
  });

  it('names page URLs given for image URLs when no image came before the pages', () => {
    const g = Governor.create('pages.example', { rate: 5 }, T0);
    report(g, pages(0, 50));
    expect(g.state.haltReason).toMatch(/^its first 50 answers were not images but .*: likely page URLs given for image URLs/);
  });

  it('names the last answer of the run in the halt: endless redirects, as a cookie wall answers', () => {
    const g = Governor.create('cookiewall.example', { rate: 20 }, T0);
    report(g, [outcome(0, 'done'), ...pages(1, 49), outcome(50, 'content', true, true, 'more than 5 redirects')]);
    expect(g.state.mode).toBe('halted');
    expect(g.state.haltReason).toContain('(the last: more than 5 redirects), after 1 images');
  });

  it('counts afresh after an image; 404s, retried errors and content that is not a page neither count nor break the run', () => {
    const g = Governor.create('mixed.example', { rate: 20 }, T0);
    report(g, [...pages(0, 45), outcome(45, 'done'), ...pages(46, 45)]);
    expect(g.state.mode).toBe('running');
    // A HEIC photo or a cut-off JPEG is content but no page; a 404 and a retried timeout are neither.
    report(g, [outcome(91, 'content'), outcome(92, 'linkrot'), outcome(93, 'error', false, false), outcome(94, 'content', true, false), ...pages(95, 4)]);
    expect(g.state.mode).toBe('running');
    report(g, pages(99, 1));
    expect(g.state.mode).toBe('halted');
  });

  it('resumes with the count started afresh: another 50 pages in a row halt it again', () => {
    const g = Governor.create('waf.example', { rate: 20 }, T0);
    report(g, [outcome(0, 'done'), ...pages(1, 50)]);
    expect(g.state.mode).toBe('halted');
    g.resume(T0 + 60_000);
    report(g, pages(51, 49), T0 + 61_000);
    expect(g.state.mode).toBe('running');
    report(g, pages(100, 1), T0 + 62_000);
    expect(g.state.mode).toBe('halted');
    // All told, across the resume, for the no-image note to leave out; other content errors are not pages.
    report(g, [outcome(101, 'content')], T0 + 63_000);
    expect(g.state.pages).toBe(100);
    expect(g.state.counts.content).toBe(101);
  });
});

describe('Governor and a site whose TTFB rises', () => {
  const report = (grantId: number, ttfbs: number[]) => ({
    batchId: 'b', grantId, unused: 0,
    outcomes: ttfbs.map((ttfbMs) => ({ url: '', cls: 'done' as const, status: 200, ttfbMs, sent: true, final: true, attempt: 1 })),
  });
  /** Reports of 50 samples every 10 s (5 req/s), TTFB by request number; the rate after each. */
  const crawl = (g: Governor, ttfbOf: (n: number) => number, reports: number, t0 = T0, latencyBySample = false) => {
    const rates: number[] = [];
    for (let r = 0; r < reports; r++) {
      g.applyReport(report(r + 1, Array.from({ length: 50 }, (_, i) => ttfbOf(r * 50 + i))), t0 + r * 10_000, { latencyBySample });
      g.tick(t0 + r * 10_000 + 1); // the monitor's, before it plans the next window (the additive ramp)
      rates.push(g.rate);
    }
    return rates;
  };

  it('slows down while the TTFB climbs as the crawl goes on; the old per-sample baseline did not', () => {
    const climbing = (n: number) => Math.min(3_000, 70 + 25 * n);
    const g = Governor.create('queueing.example', { rate: 5 }, T0);
    const rates = crawl(g, climbing, 3);
    expect(rates[0]).toBeCloseTo(3.75, 2);
    expect(rates[2]).toBeLessThan(2.5);
    const old = Governor.create('queueing.example', { rate: 5 }, T0);
    expect(crawl(old, climbing, 3, T0, true)).toEqual([5, 5, 5]);
  });

  it('is back at its target within minutes after the TTFB stepped up for good; the old baseline kept it down', () => {
    // A minute at 100 ms, then 400 ms for 15 minutes.
    const stepped = (n: number) => (n < 300 ? 100 : 400);
    const rates = crawl(Governor.create('slower.example', { rate: 5 }, T0), stepped, 6 + 90).slice(6);
    expect(Math.min(...rates)).toBeLessThan(2.5);
    expect(rates.slice(-10)).toEqual(Array(10).fill(5));
    const old = crawl(Governor.create('slower.example', { rate: 5 }, T0), stepped, 6 + 90, T0, true).slice(6);
    expect(old.slice(-30).every((r) => r < 2.5)).toBe(true);
  });
});

describe('Governor and a site whose uplink fills (the download-speed watch)', () => {
  /** Reports of 20 large images every 10 s: TTFB steady at 20 ms, transfer ms per MiB by report. */
  const crawl = (g: Governor, msPerMibOf: (r: number) => number, reports: number, policy: { watchDownloadSpeed?: () => boolean } = {}) => {
    const rates: number[] = [];
    const events: string[] = [];
    for (let r = 0; r < reports; r++) {
      const outcomes = Array.from({ length: 20 }, () => ({ url: '', cls: 'done' as const, status: 200, ttfbMs: 20, msPerMib: msPerMibOf(r), sent: true, final: true, attempt: 1 }));
      events.push(...g.applyReport({ batchId: 'b', grantId: r + 1, unused: 0, outcomes }, T0 + r * 10_000, policy).map((e) => e.detail));
      g.tick(T0 + r * 10_000 + 1);
      rates.push(g.rate);
    }
    return { rates, events };
  };

  it('slows a source whose downloads slow down as they pile up, though its TTFB stays low', () => {
    // 2 s a MiB at first, then each download slower as more are open at once.
    const filling = (r: number) => (r < 1 ? 2_000 : 2_000 * 8 * r);
    const g = Governor.create('museum.example', { rate: 5 }, T0);
    const { rates, events } = crawl(g, filling, 3);
    expect(rates[0]).toBe(5);
    expect(rates[1]).toBeCloseTo(3.75, 2);
    expect(events[0]).toBe('median download speed below a third of its baseline 512 KiB/s; rate 3.75/s');
    // Slower still at the next report: slowed again, against the baseline learnt meanwhile.
    expect(rates[2]).toBeLessThan(3);
    expect(g.state.slowedBy?.by).toBe('its downloads\' speed (median 32 KiB/s against a baseline of 441 KiB/s)');
    // Its history from before the watch replays without it.
    expect(crawl(Governor.create('museum.example', { rate: 5 }, T0), filling, 3, { watchDownloadSpeed: () => false }).rates).toEqual([5, 5, 5]);
  });

  it('leaves alone downloads that are slower but still fast, and a fast site\'s noise', () => {
    // Four times slower, yet under a second a MiB more: a busy worker reading bodies late.
    expect(crawl(Governor.create('fast.example', { rate: 5 }, T0), (r) => (r < 1 ? 20 : 80 + (r % 2) * 600), 6).rates).toEqual(Array(6).fill(5));
    // Twice as slow on a slow link: the site's own variation.
    expect(crawl(Governor.create('slow-link.example', { rate: 5 }, T0), (r) => (r < 1 ? 4_000 : 8_000), 6).rates).toEqual(Array(6).fill(5));
  });
});
