import { MonitorModel } from './monitorState';
import { detailsMarkdown, type MonitorStats } from './monitorStats';
import { crawlSecondsLeft, durationText, secondsLeft } from './timeLeft';

const T0 = 1_000_000;

function model(rate: number, urls: number): MonitorModel {
  const m = MonitorModel.fromInput({ source: 's', config: { rate }, work: [{ chunkId: 'c1', count: urls }] }, T0);
  const [chunk] = m.takeChunksToStart();
  m.batchStarted('b1', chunk!);
  return m;
}

const done = (n: number, sent = true) => Array.from({ length: n }, () => ({ url: '', cls: 'done' as const, status: 200, sent, final: true, attempt: 1, ttfbMs: 50 }));

describe('the time a source still takes', () => {
  it('is its URLs left at its rate', () => {
    expect(secondsLeft(model(10, 500).stats(T0), T0)).toBe(50);
  });

  it('waits out a 429 hold, then rises with the ramp back to the target', () => {
    const m = model(10, 500);
    m.onReport({ batchId: 'b1', grantId: 1, outcomes: [...done(1), { url: '', cls: 'error', status: 429, sent: true, final: false, attempt: 1, retryAfterMs: 30_000, atMs: T0 }], unused: 0 }, T0);
    // 499 URLs: nothing for 30 s, then 5/s rising by 10/180 a second: 499 requests take 71.4 s of the 90 s ramp.
    expect(secondsLeft(m.stats(T0), T0)).toBeCloseTo(30 + 71.4, 0);
    // Past the ramp: 1,000 URLs more than it covers go at the target.
    const big = model(10, 2_000);
    big.onReport({ batchId: 'b1', grantId: 1, outcomes: [{ url: '', cls: 'error', status: 429, sent: true, final: false, attempt: 1, retryAfterMs: 30_000, atMs: T0 }], unused: 0 }, T0);
    expect(secondsLeft(big.stats(T0), T0)).toBeCloseTo(30 + 90 + (2_000 - 675) / 10, 5);
  });

  it('goes at the pace of the quota the site said it spent, while that binds', () => {
    const m = model(10, 1_000);
    // 100 requests at 10/s spent the site's quota of 100 an hour: held the longest Retry-After
    // honoured (15 min); its quota resets in 3,590 s.
    const events = m.onReport({ batchId: 'b1', grantId: 1, outcomes: done(100), unused: 0, quotaHoldMs: 900_000, quotaResetMs: 3_590_000, quotaLimit: 100 }, T0);
    expect(events.find((e) => e.event === 'quota-spent')?.detail).toBe("the site's rate-limit headers say none of its 100 requests left; nothing sent for 900 s, the longest Retry-After honoured (its quota resets in 3590 s)");
    const st = m.stats(T0);
    expect(st.quotaPace).toEqual({ limit: 100, everyS: 3_600 });
    // 900 URLs left: the hold, a window's 100 at 10/s, then 800 at 100 an hour (not 90 s at 10/s).
    expect(secondsLeft(st, T0)).toBeCloseTo(900 + 10 + 800 * 36, 5);
    expect(detailsMarkdown(st, 'running', T0)).toContain("the site's quota (its rate-limit headers): 100 requests each 1h00m, about 0.028/s on average; the time left is at that pace");
    // A quota the rate keeps within is no note, nor any slower pace.
    expect(detailsMarkdown({ ...st, rate: 0.02 }, 'running', T0)).not.toContain("the site's quota");
    // Twice the quota sent since without its being spent: the site takes the rate now.
    m.onReport({ batchId: 'b1', grantId: 2, outcomes: done(201), unused: 0 }, T0 + 901_000);
    expect(m.stats(T0 + 901_000).quotaPace).toBeNull();
    expect(secondsLeft(m.stats(T0 + 901_000), T0 + 901_000)).toBeCloseTo(699 / 10, 5);
  });

  it('counts the slots that pass unsent and the requests a URL takes', () => {
    const m = model(10, 500);
    const st = m.stats(T0);
    expect(secondsLeft({ ...st, tokens: { ...st.tokens, missRate: 0.5 } }, T0)).toBe(100);
    // A site held to the downloads its link bears passes three slots in four: 500 URLs at 2.5/s.
    expect(secondsLeft({ ...st, connectionWaits: { share: 0.75, perSite: 2, learnt: true } }, T0)).toBe(200);
    // Requests that waited for one of the worker's own connections are no slots passed.
    expect(secondsLeft({ ...st, connectionWaits: { share: 0.75, perSite: 64 } }, T0)).toBe(50);
    // 100 URLs finished with 200 requests (tries again, redirects): 400 URLs left take 800.
    const tried = { ...st, urls: { ...st.urls, finished: 100 }, counts: { ...st.counts, requests: 200 } };
    expect(secondsLeft(tried, T0)).toBe(80);
    // Mostly disallowed by robots.txt: 100 URLs finished with 10 requests.
    expect(secondsLeft({ ...tried, counts: { ...st.counts, requests: 10 } }, T0)).toBe(4);
    // Too few finished to tell: one request each.
    expect(secondsLeft({ ...tried, urls: { ...st.urls, finished: 9 }, counts: { ...st.counts, requests: 40 } }, T0)).toBeCloseTo(49.1, 5);
  });

  it('is none while an operator is to act, and nothing once every URL has finished', () => {
    const st = model(10, 500).stats(T0);
    for (const state of ['paused', 'halted', 'stopped'] as const) expect(secondsLeft({ ...st, state }, T0)).toBeNull();
    expect(secondsLeft({ ...st, state: 'halted', urls: { ...st.urls, finished: 500 } }, T0)).toBe(0);
    expect(secondsLeft({ ...st, rate: 0 }, T0)).toBeNull();
  });

  it('adds a temporary halt', () => {
    const st: MonitorStats = { ...model(4, 400).stats(T0), state: 'cooling', coolingUntil: new Date(T0 + 60_000).toISOString() };
    expect(secondsLeft(st, T0)).toBe(160);
  });

  it('of a crawl is its slowest running source', () => {
    expect(crawlSecondsLeft([50, null, 3_600, 0])).toBe(3_600);
    expect(crawlSecondsLeft([null])).toBeNull();
  });

  it('reads as people write it', () => {
    expect(['0.2', '45', '59.5', '61', '3599', '11400', '86400', '1000000'].map((s) => durationText(Number(s))))
      .toEqual(['1s', '45s', '1m', '2m', '1h00m', '3h10m', '1d00h', '11d13h']);
  });

  it('shows in the Web UI\'s details while URLs are left', () => {
    const m = model(10, 500);
    // T0 is 1970-01-01T00:16:40Z: 50 s later, rounded up to the minute.
    expect(detailsMarkdown(m.stats(T0), 'running', T0)).toContain('URLs 0/500 finished (about 50s left at this pace, to about 1970-01-01T00:18Z)');
    m.onReport({ batchId: 'b1', grantId: 1, outcomes: done(500), unused: 0 }, T0 + 50_000);
    expect(detailsMarkdown(m.stats(T0 + 50_000), 'running', T0 + 50_000)).toMatch(/URLs 500\/500 finished; /);
  });
});
