import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import sharp from 'sharp';
import { createCrawlActivities } from '../../src/activities/crawlActivities';
import { clearSourceBlocks } from '../../src/activities/sourceBlocks';
import { StoreRecorder } from '../../src/activities/storeRecorder';
import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { Fetcher } from '../../src/pipeline/fetcher';
import { ImagePipeline } from '../../src/pipeline/imagePipeline';
import { Spool } from '../../src/pipeline/spool';
import { LocalStore } from '../../src/pipeline/store';
import type { FetchBatchInput, FetchBatchResult } from '../../src/shared/types';
import { Origin } from '../support/origin';
import { ThinUplink } from '../support/thinUplink';

// A site whose uplink is its bottleneck: every download slows as more are open, while the first
// byte still comes at once. Asked for more than its link bears, it had the worker's 64
// connections busy for the whole crawl (session 63); the worker now holds it to what the link
// carries, and says so in its report.
describe('a site whose downloads slow as more are open (real undici, sharp, store; origin on 127.0.0.1)', () => {
  const origin = new Origin();
  let link: ThinUplink;
  let dir: string;
  let pipeline: ImagePipeline;
  let image: Buffer;

  beforeAll(async () => {
    // ~480 KB of noise: large enough for its transfer time to tell of the link.
    const body = image = await sharp({ create: { width: 900, height: 700, channels: 3, noise: { type: 'gaussian', mean: 128, sigma: 60 }, background: '#808080' } }).jpeg({ quality: 90 }).toBuffer();
    link = new ThinUplink(body, 3_000_000);
    origin.route('/robots.txt', (_q, r) => { r.writeHead(404); r.end(); }).route('*', link.route);
    await origin.start();
    clearSourceBlocks();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawl-open-limit-'));
    const store = new LocalStore(path.join(dir, 'store'));
    pipeline = new ImagePipeline(pipelineConfigFromEnv({
      allowNetworks: ['127.0.0.0/8'], totalTimeoutMs: 60_000, maxConnectionsPerSite: 16,
      // Probed every second or so instead of every 10 s (and 60 s after a probe that did not pay).
      openLimit: { settleMs: 1_000, holdMs: 3_000 },
    }), store, new Spool(path.join(dir, 'spool')));
  });
  afterAll(async () => {
    await pipeline?.close();
    link.stop();
    await origin.stop();
  });

  const site = () => new URL(origin.url('/')).origin;

  /** A grant of `n` URLs at 20 a second: the link bears about 6. */
  function grant(grantId: number, n: number): FetchBatchInput {
    const startMs = Date.now() + 100;
    return {
      source: `127.0.0.1:${origin.port}`, batchId: 'b1', grantId, maxAttempts: 1,
      items: Array.from({ length: n }, (_, i) => ({ url: origin.url(`/g${grantId}/${i}.jpg`), attempt: 1 })),
      schedule: { startMs, endMs: startMs + n * 50, intervalMs: 50, burstSlots: 0 },
    };
  }

  it('holds the site to the downloads its link carries, hands the slots it could not use back, and reports the limit', async () => {
    const acts = createCrawlActivities({ processor: pipeline, recorder: new StoreRecorder(new LocalStore(path.join(dir, 'store'))) });
    link.mostOpen = 0;
    const first = (await new MockActivityEnvironment().run(acts.fetchBatch, grant(1, 300))) as FetchBatchResult;
    // The first answer declared a large body: eight at once until judged (the pool's 16 before).
    expect(link.mostOpen).toBeGreaterThanOrEqual(6);
    // (One more for each 50 ms slot that passed before the first answer came, on a loaded machine.)
    expect(link.mostOpen).toBeLessThanOrEqual(9);
    // Nothing lost: each URL either ended or went back for a later grant.
    expect(first.outcomes.length + first.unused.length).toBe(300);
    expect(first.outcomes.every((o) => o.cls === 'done')).toBe(true);
    expect(first.unused.length).toBeGreaterThan(0);
    expect(first.connectionWaits).toMatchObject({ learnt: true });
    expect(first.connectionWaits!.requests).toBeGreaterThan(0);

    // Probed down towards the few that fill the link (the pool's 16 without the limit). The
    // throughput each probe is judged by is a median of six downloads: on a loaded machine one
    // step down has been taken back (5 -> 4 -> 5), so a step's slack is allowed.
    link.mostOpen = 0;
    const second = (await new MockActivityEnvironment().run(acts.fetchBatch, grant(2, 60))) as FetchBatchResult;
    expect(second.outcomes.length + second.unused.length).toBe(60);
    // The slots it passed were the site's, not a worker falling behind (a loaded machine's late
    // wake-up may miss one or two).
    expect(second.missedSlots).toBeLessThanOrEqual(2);
    expect(second.connectionWaits).toMatchObject({ learnt: true });
    expect(second.connectionWaits!.perSite).toBeLessThanOrEqual(6);
    // At most one probe of one more while it ran.
    expect(link.mostOpen).toBeLessThanOrEqual(7);
    // ...and the link still full: about six images a second through it.
    expect(second.outcomes.length).toBeGreaterThanOrEqual(8);
    // What it judged goes to the source's monitor, for the workers of its next grants.
    const learnt = second.openLimits?.[site()];
    expect(learnt?.limit).toBeGreaterThanOrEqual(2);
    expect(learnt?.limit).toBeLessThanOrEqual(7);
  }, 60_000);

  it('keeps a worker new to the site to the limit another worker learnt, from its first request (the grant\'s openLimits)', async () => {
    const fresh = new ImagePipeline(pipelineConfigFromEnv({
      allowNetworks: ['127.0.0.0/8'], totalTimeoutMs: 60_000, maxConnectionsPerSite: 16, openLimit: { settleMs: 1_000, holdMs: 3_000 },
    }), new LocalStore(path.join(dir, 'store')), new Spool(path.join(dir, 'spool2')));
    try {
      const acts = createCrawlActivities({ processor: fresh, recorder: new StoreRecorder(new LocalStore(path.join(dir, 'store'))) });
      link.mostOpen = 0;
      // A 480 KB body alone on the 3 MB/s link: about 170 ms, some 370 ms a MiB.
      const hint = { limit: 3, fastestMsPerMib: 370 };
      const taken = (await new MockActivityEnvironment().run(acts.fetchBatch, { ...grant(3, 60), openLimits: { [site()]: hint } })) as FetchBatchResult;
      expect(taken.outcomes.length + taken.unused.length).toBe(60);
      // Three, and at most one probe of one more: not the pool's 16 of the first grant above.
      expect(link.mostOpen).toBeLessThanOrEqual(4);
      expect(taken.connectionWaits).toMatchObject({ learnt: true });
      expect(taken.openLimits?.[site()]?.limit).toBeGreaterThanOrEqual(2);
    } finally {
      await fresh.close();
    }
  }, 60_000);

  it('starts a site whose large images come without a length (chunked) with eight at once too', async () => {
    const chunked = new ThinUplink(image, 3_000_000, { chunked: true });
    const other = new Origin().route('/robots.txt', (_q, r) => { r.writeHead(404); r.end(); }).route('*', chunked.route);
    await other.start();
    try {
      const acts = createCrawlActivities({ processor: pipeline, recorder: new StoreRecorder(new LocalStore(path.join(dir, 'store'))) });
      const startMs = Date.now() + 100;
      const result = (await new MockActivityEnvironment().run(acts.fetchBatch, {
        source: `127.0.0.1:${other.port}`, batchId: 'b3', grantId: 1, maxAttempts: 1,
        items: Array.from({ length: 60 }, (_, i) => ({ url: other.url(`/c/${i}.jpg`), attempt: 1 })),
        schedule: { startMs, endMs: startMs + 60 * 50, intervalMs: 50, burstSlots: 0 },
      })) as FetchBatchResult;
      expect(result.outcomes.length + result.unused.length).toBe(60);
      expect(result.outcomes.every((o) => o.cls === 'done')).toBe(true);
      // The pool's 16 before. Three or so go out before the first body has streamed 256 KiB
      // (87 ms alone on this link); a loaded machine's slower link may let a few more.
      expect(chunked.mostOpen).toBeGreaterThanOrEqual(6);
      expect(chunked.mostOpen).toBeLessThanOrEqual(11);
    } finally {
      chunked.stop();
      await other.stop();
    }
  }, 60_000);

  it('counts every request it ends as no longer open, whatever its end (or a learnt limit would hold the site for good)', async () => {
    const hostile = new Origin()
      .route('/stall.jpg', (_q, r) => { r.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': 1_000 }); r.write('x'); })
      .route('/reset.jpg', (q) => { q.socket.destroy(); })
      .route('/big.jpg', (_q, r) => { r.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': 5_000_000 }); r.end(); })
      .route('/gone.jpg', (_q, r) => { r.writeHead(404); r.end('gone'); })
      .route('/ok.jpg', (_q, r) => { r.writeHead(200, { 'content-type': 'image/jpeg' }); r.end('ok'); });
    await hostile.start();
    const fetcher = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'], maxBodyBytes: 100_000, totalTimeoutMs: 1_500, headersTimeoutMs: 1_000, minRateGraceMs: 500 }));
    try {
      const aborted = new AbortController();
      const results = await Promise.all([
        fetcher.fetch(hostile.url('/stall.jpg')), fetcher.fetch(hostile.url('/reset.jpg')), fetcher.fetch(hostile.url('/big.jpg')),
        fetcher.fetch(hostile.url('/gone.jpg')), fetcher.fetch(hostile.url('/ok.jpg')),
        fetcher.fetch(hostile.url('/stall.jpg'), { signal: aborted.signal }),
        fetcher.fetch(hostile.url('/ok.jpg'), { sendBy: Date.now() - 1_000 }),
        new Promise((r) => setTimeout(r, 100)).then(() => aborted.abort(new Error('cancelled'))),
      ]);
      expect(results.slice(0, 7).map((r) => (r as { ok: boolean }).ok)).toEqual([false, false, false, false, true, false, false]);
      expect(fetcher.downloads.openAt(new URL(hostile.url('/')).origin)).toBe(0);
    } finally {
      await fetcher.close();
      await hostile.stop();
    }
  });

  it('holds a site that refused a request with others open (nginx limit_conn) below that number in the grants after', async () => {
    let open = 0;
    let mostOpen = 0;
    let refusals = 0;
    const body = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#808080' } }).jpeg().toBuffer();
    const limited = new Origin()
      .route('/robots.txt', (_q, r) => { r.writeHead(404); r.end(); })
      .route('*', (_q, r) => {
        // Four at once; a fifth is refused at once, as limit_conn does.
        if (open >= 4) {
          refusals += 1;
          r.writeHead(503, { 'content-type': 'text/plain' });
          return r.end('busy');
        }
        open += 1;
        mostOpen = Math.max(mostOpen, open);
        setTimeout(() => { open -= 1; r.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length }); r.end(body); }, 700);
      });
    await limited.start();
    try {
      const acts = createCrawlActivities({ processor: pipeline, recorder: new StoreRecorder(new LocalStore(path.join(dir, 'store'))) });
      const at = (grantId: number): FetchBatchInput => {
        const startMs = Date.now() + 300;
        return {
          source: `127.0.0.1:${limited.port}`, batchId: 'b4', grantId, maxAttempts: 3,
          items: Array.from({ length: 20 }, (_, i) => ({ url: limited.url(`/l${grantId}/${i}.jpg`), attempt: 1 })),
          // A slot every 100 ms for answers of 700 ms: seven open at once, unless held.
          schedule: { startMs, endMs: startMs + 20 * 100, intervalMs: 100, burstSlots: 0 },
        };
      };
      const first = (await new MockActivityEnvironment().run(acts.fetchBatch, at(1))) as FetchBatchResult;
      expect(refusals).toBe(1);
      expect(first.outcomes.some((o) => o.status === 503)).toBe(true);
      // The monitor grants again after its hold.
      clearSourceBlocks();
      mostOpen = 0;
      const second = (await new MockActivityEnvironment().run(acts.fetchBatch, at(2))) as FetchBatchResult;
      expect(refusals).toBe(1);
      expect(mostOpen).toBe(4);
      expect(second.outcomes.length + second.unused.length).toBe(20);
      expect(second.outcomes.every((o) => o.cls === 'done')).toBe(true);
      expect(second.unused.length).toBeGreaterThan(0);
      expect(second.connectionWaits).toMatchObject({ learnt: true, refused: true, perSite: 4 });

      // The hold goes to the source's monitor, which hands it to the next grants' workers.
      const site = new URL(limited.url('/')).origin;
      expect(second.refusals?.[site]).toMatchObject({ limit: 4 });
      expect(second.refusals![site]!.answerMs).toBeGreaterThanOrEqual(690);
      // A second worker on the same address takes the next grant, with the hold, while the first
      // worker's last requests of the grant before are still open: it waits for them (an
      // answer's time) instead of finding the site at its four.
      const other = new ImagePipeline(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'], totalTimeoutMs: 60_000, maxConnectionsPerSite: 16 }),
        new LocalStore(path.join(dir, 'store')), new Spool(path.join(dir, 'spool-other')));
      try {
        const otherActs = createCrawlActivities({ processor: other, recorder: new StoreRecorder(new LocalStore(path.join(dir, 'store'))) });
        const asked: number[] = [];
        const ask = other.othersMayHold.bind(other);
        other.othersMayHold = (origin, startMs) => { asked.push(Date.now() - startMs); return ask(origin, startMs); };
        mostOpen = 0;
        const before = at(3);
        const after: FetchBatchInput = { ...at(4), refusals: second.refusals!, schedule: { ...before.schedule, startMs: before.schedule.endMs, endMs: before.schedule.endMs + 2_000 } };
        const [a, b] = (await Promise.all([new MockActivityEnvironment().run(acts.fetchBatch, before), new MockActivityEnvironment().run(otherActs.fetchBatch, after)])) as FetchBatchResult[];
        expect(refusals).toBe(1);
        expect(mostOpen).toBe(4);
        for (const r of [a!, b!]) {
          expect(r.outcomes.length + r.unused.length).toBe(20);
          expect(r.outcomes.every((o) => o.cls === 'done')).toBe(true);
        }
        // The later grant's first request waited for the earlier one's last answers; asked once
        // its window had begun, not as its activity started two seconds ahead (when the worker
        // may still be sending the window before, its own).
        expect(b!.connectionWaits).toMatchObject({ learnt: true, refused: true, perSite: 4 });
        expect(asked).toHaveLength(1);
        expect(asked[0]).toBeGreaterThanOrEqual(-50);
      } finally {
        await other.close();
      }
    } finally {
      await limited.stop();
    }
  }, 30_000);

  it('keeps to a source\'s maxConnections: the site never has more of its requests open, and the slots it could not use go back', async () => {
    let open = 0;
    let mostOpen = 0;
    const slow = new Origin()
      .route('/robots.txt', (_q, r) => { r.writeHead(404); r.end(); })
      .route('*', (_q, r) => {
        open += 1;
        mostOpen = Math.max(mostOpen, open);
        setTimeout(() => { open -= 1; r.writeHead(200, { 'content-type': 'image/jpeg' }); r.end('not really'); }, 700);
      });
    await slow.start();
    try {
      const acts = createCrawlActivities({ processor: pipeline, recorder: new StoreRecorder(new LocalStore(path.join(dir, 'store'))) });
      const at = (maxConnections?: number): FetchBatchInput => {
        const startMs = Date.now() + 300;
        return {
          source: `127.0.0.1:${slow.port}`, batchId: 'b2', grantId: maxConnections ?? 0, maxAttempts: 1, ...(maxConnections ? { maxConnections } : {}),
          items: Array.from({ length: 12 }, (_, i) => ({ url: slow.url(`/m${maxConnections ?? 0}/${i}.jpg`), attempt: 1 })),
          // A slot every 150 ms for answers of 700 ms: five open at once, unless held.
          schedule: { startMs, endMs: startMs + 12 * 150, intervalMs: 150, burstSlots: 0 },
        };
      };
      const free = (await new MockActivityEnvironment().run(acts.fetchBatch, at())) as FetchBatchResult;
      expect(mostOpen).toBeGreaterThanOrEqual(4);
      expect(free.connectionWaits).toBeUndefined();
      mostOpen = 0;
      const held = (await new MockActivityEnvironment().run(acts.fetchBatch, at(2))) as FetchBatchResult;
      expect(mostOpen).toBe(2);
      expect(held.outcomes.length + held.unused.length).toBe(12);
      expect(held.unused.length).toBeGreaterThan(0);
      expect(held.missedSlots).toBeLessThanOrEqual(2);
      expect(held.connectionWaits).toMatchObject({ given: true, perSite: 2 });
      expect(held.connectionWaits!.requests).toBeGreaterThan(0);
    } finally {
      await slow.stop();
    }
  });
});
