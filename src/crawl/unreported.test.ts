import type { MonitorStats } from '../workflows/monitorStats';
import { secondsLeft } from '../workflows/timeLeft';
import { unreportedIn, unreportedUrls, withUnreported } from './unreported';

function stats(finished: number, total: number): MonitorStats {
  return {
    source: 's', state: 'running', rate: 1, target: 1, retryAfterUntil: null, crawlDelayUntil: null, robotsRetryAt: null, coolingUntil: null,
    counts: { done: finished, linkrot: 0, robots: 0, content: 0, refused: 0, error: 0, retries: 0, requests: finished },
    urls: { total, finished, queuedChunks: 0, inBatches: total - finished },
    batches: { active: 1, finished: 0 },
    tokens: { granted: 0, unused: 0, missed: 0, missRate: 0, wanted: 0, nextWindowAt: null, leadMs: 300 },
  } as unknown as MonitorStats;
}

describe('outcomes a fetch activity has reached and not yet reported', () => {
  it('counts final outcomes by class, failed tries with tries left as retries, and the requests sent', () => {
    const u = unreportedIn({
      slim: [
        [0, { cls: 'done', final: true, sent: true, status: 200 }, { width: 10 }],
        [3, { cls: 'done', final: true, sent: true }, {}],
        [1, { cls: 'linkrot', final: true, sent: true, status: 404 }, {}],
        [2, { cls: 'error', final: false, sent: true, status: 503 }, null],
        [4, { cls: 'robots', final: true, sent: false }, {}],
      ],
      hops: [[5, { url: 'http://a.example/x', redirects: 1 }]],
    });
    expect(u).toEqual({ final: { done: 2, linkrot: 1, robots: 1 }, retries: 1, requests: 4 });
    expect(unreportedUrls(u)).toBe(4);
  });

  it('reads the `done` entries of heartbeats from builds before `slim`, and nothing from what it does not know', () => {
    expect(unreportedIn({ done: [[0, { url: 'http://a.example/1.jpg', cls: 'content', final: true, sent: true }, {}]] }).final).toEqual({ content: 1 });
    for (const odd of [undefined, null, 'text', 7, [], { slim: 'x' }, { slim: [[0, null, null], [1, { cls: 'nonsense', final: true }, {}], 'x'] }]) {
      expect(unreportedUrls(unreportedIn(odd))).toBe(0);
    }
  });

  it('adds them to the monitor\'s counts, and leaves them out when they would pass its total (counted already)', () => {
    const u = unreportedIn({ slim: Array.from({ length: 8 }, (_, i) => [i, { cls: 'done', final: true, sent: true }, {}]) });
    const st = withUnreported(stats(30, 120), u);
    expect(st.urls.finished).toBe(38);
    expect(st.counts.done).toBe(38);
    expect(st.counts.requests).toBe(38);
    // A grant reported between the read of its heartbeat and the query: counted once, by the monitor.
    const landed = withUnreported(stats(116, 120), u);
    expect(landed.urls.finished).toBe(116);
    expect(landed.counts.done).toBe(116);
  });

  it('leaves the time left as the pace says: its requests are counted with its URLs', () => {
    // 82 URLs left at 1/s. Counting the URLs without their requests made each URL look like
    // 0.79 of a request (30 + 8 finished on 30 requests): 16 s left was shown instead of 82.
    const u = unreportedIn({ slim: Array.from({ length: 8 }, (_, i) => [i, { cls: 'done', final: true, sent: true }, {}]) });
    expect(secondsLeft(withUnreported(stats(30, 120), u), Date.now())).toBeCloseTo(82, 5);
  });
});
