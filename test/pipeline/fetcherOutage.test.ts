import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createCrawlActivities } from '../../src/activities/crawlActivities';
import { StoreRecorder } from '../../src/activities/storeRecorder';
import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { Fetcher } from '../../src/pipeline/fetcher';
import { ImagePipeline } from '../../src/pipeline/imagePipeline';
import { RobotsCache } from '../../src/pipeline/robots';
import { Spool } from '../../src/pipeline/spool';
import { LocalStore } from '../../src/pipeline/store';
import { freePort } from '../../src/temporal/devServer';
import type { Connector } from '../../src/pipeline/warmConnections';
import { WorkerOutageWatch } from '../../src/pipeline/workerOutage';
import type { FetchBatchInput, FetchBatchResult } from '../../src/shared/types';
import { jpeg } from '../support/images';
import { Origin } from '../support/origin';

/**
 * The worker's own network down: every connect fails with ENETUNREACH, as Node's net says when
 * no route leads out ("connect ENETUNREACH 127.0.1.1:8190 - Local (0.0.0.0:0)"; measured with
 * an iptables rule rejecting with icmp-net-unreachable). Once that is seen at three sites with
 * none answering, a request that cannot connect is the worker's failure, not its site's.
 */
describe('the worker\'s own network down (real undici, origin on 127.0.0.1)', () => {
  // Sites on loopback addresses of their own, each with a server.
  const hosts = ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4'];
  const origins = new Map(hosts.map((h) => [h, new Origin()]));
  const origin = origins.get('127.0.0.1')!;
  let down = false;
  const networkDown = (connect: Connector): Connector => (opts, cb) => {
    if (!down) return connect(opts, cb);
    const err = Object.assign(new Error(`connect ENETUNREACH ${opts.hostname}:${opts.port} - Local (0.0.0.0:0)`), { code: 'ENETUNREACH', syscall: 'connect', errno: -101 });
    setImmediate(() => cb(err, null));
  };
  const cfg = () => pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] });
  const at = (host: string, p: string) => origins.get(host)!.url(p);

  beforeAll(async () => {
    const image = await jpeg(64, 48, 80);
    for (const [host, o] of origins) {
      o.serve('/robots.txt', 'User-agent: *\nAllow: /\n', 'text/plain');
      o.serve('/a.jpg', image);
      await o.start(host);
    }
  });
  afterAll(() => Promise.all([...origins.values()].map((o) => o.stop())));
  afterEach(() => { down = false; });

  /** Fetch activities on a pipeline whose network `down` cuts, and grants of two URLs for them. */
  function activitiesOnCuttableNetwork(batchId: string, window: { leadMs: number; intervalMs: number; slots: number }) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawl-network-down-'));
    const store = new LocalStore(path.join(dir, 'store'));
    const outage = new WorkerOutageWatch({ quietMs: 0 });
    const pipeline = new ImagePipeline(cfg(), store, new Spool(path.join(dir, 'spool')), { wrapConnector: networkDown, outage });
    const acts = createCrawlActivities({ processor: pipeline, recorder: new StoreRecorder(store) });
    const grant = (grantId: number, host: string): FetchBatchInput => {
      const startMs = Date.now() + window.leadMs;
      return {
        source: host, batchId, grantId, maxAttempts: 3,
        items: ['/a.jpg', '/b.jpg'].map((p) => ({ url: at(host, p), attempt: 1 })),
        schedule: { startMs, endMs: startMs + window.slots * window.intervalMs, intervalMs: window.intervalMs, burstSlots: 0 },
      };
    };
    return { outage, pipeline, acts, grant };
  }

  it('sends nothing and blames no site once three are unreachable with none answering; the first answer ends it', async () => {
    const fetcher = new Fetcher(cfg(), { wrapConnector: networkDown, outage: new WorkerOutageWatch({ quietMs: 0 }) });
    try {
      expect(await fetcher.fetch(at('127.0.0.1', '/a.jpg'))).toMatchObject({ ok: true, status: 200 });
      down = true;
      // The first two could be those sites' own trouble: they count as before.
      for (const host of ['127.0.0.2', '127.0.0.3']) {
        const res = await fetcher.fetch(at(host, '/a.jpg'));
        expect(res).toMatchObject({ ok: false, failure: 'network', sent: true });
        expect(res.reason).toMatch(/ENETUNREACH/);
      }
      const res = await fetcher.fetch(at('127.0.0.4', '/a.jpg'));
      expect(res).toMatchObject({ ok: false, failure: 'late', sent: false });
      for (const o of origins.values()) expect(o.hits('/a.jpg').length).toBeLessThanOrEqual(o === origin ? 1 : 0);
      expect(res.reason).toMatch(/^not sent: the worker's network looks down \(ENETUNREACH/);
      expect(await fetcher.fetch(at('127.0.0.2', '/a.jpg'))).toMatchObject({ failure: 'late', sent: false });
      expect(fetcher.outage.down).toBe(true);
      down = false;
      expect(await fetcher.fetch(at('127.0.0.3', '/a.jpg'))).toMatchObject({ ok: true, status: 200 });
      expect(fetcher.outage.down).toBe(false);
      down = true;
      expect(await fetcher.fetch(at('127.0.0.4', '/a.jpg'))).toMatchObject({ failure: 'network', sent: true });
    } finally {
      await fetcher.close();
    }
  });

  it('counts refused connections against their sites: a reset is the host answering', async () => {
    // Ports nobody listens on: a real ECONNREFUSED from each.
    const ports = await Promise.all([0, 1, 2, 3].map(() => freePort()));
    const fetcher = new Fetcher(cfg(), { outage: new WorkerOutageWatch({ quietMs: 0 }) });
    try {
      expect(await fetcher.fetch(origin.url('/a.jpg'))).toMatchObject({ ok: true });
      for (const port of ports) {
        const res = await fetcher.fetch(`http://127.0.0.1:${port}/a.jpg`);
        expect(res).toMatchObject({ ok: false, failure: 'network', sent: true });
        expect(res.reason).toMatch(/ECONNREFUSED/);
      }
      expect(fetcher.outage.down).toBe(false);
    } finally {
      await fetcher.close();
    }
  });

  it('counts no robots.txt try, and puts the image back for a later slot instead of failing it against the site', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawl-network-down-'));
    const store = new LocalStore(path.join(dir, 'store'));
    const outage = new WorkerOutageWatch({ quietMs: 0 });
    const ctx = { source: 's', attempt: 1, signal: new AbortController().signal };
    const first = new ImagePipeline(cfg(), store, new Spool(path.join(dir, 'spool')), { wrapConnector: networkDown, outage });
    try {
      expect(await first.process(at('127.0.0.1', '/a.jpg'), ctx)).toMatchObject({ requeue: true, siteFile: 'robots.txt' });
      expect(await first.process(at('127.0.0.1', '/a.jpg'), ctx)).toMatchObject({ outcome: { cls: 'done', status: 200 } });
    } finally {
      await first.close();
    }
    const robots = new RobotsCache(new Fetcher(cfg(), { wrapConnector: networkDown, outage }), cfg());
    // A new pipeline (no open connection): robots.txt for 127.0.0.1 comes from the store.
    const pipeline = new ImagePipeline(cfg(), store, new Spool(path.join(dir, 'spool')), { wrapConnector: networkDown, outage });
    try {
      down = true;
      // Two sites unreachable could be their own trouble: those tries count (disallowed for now).
      for (const host of ['127.0.0.2', '127.0.0.3']) expect((await robots.check(new URL(at(host, '/a.jpg')))).verdict).not.toEqual({ kind: 'pending' });
      const hits = origins.get('127.0.0.4')!.hits('/robots.txt').length;
      expect((await robots.check(new URL(at('127.0.0.4', '/a.jpg')))).verdict).toEqual({ kind: 'pending' });
      expect(outage.down).toBe(true);
      const image = await pipeline.process(at('127.0.0.1', '/b.jpg'), ctx);
      expect(image).toMatchObject({ requeue: true, outcome: { cls: 'error', sent: false } });
      down = false;
      // The try made while the network was down was not the site's: it is made again at once.
      expect((await robots.check(new URL(at('127.0.0.4', '/a.jpg')))).verdict).toEqual({ kind: 'allowed' });
      expect(origins.get('127.0.0.4')!.hits('/robots.txt')).toHaveLength(hits + 1);
    } finally {
      await pipeline.close();
    }
  });

  it('has the fetch activity hand its URLs back unsent, blaming no site, and tell the monitor why its slots passed', async () => {
    const { outage, pipeline, acts, grant } = activitiesOnCuttableNetwork('b1', { leadMs: 50, intervalMs: 30, slots: 6 });
    try {
      const up = (await new MockActivityEnvironment().run(acts.fetchBatch, grant(1, '127.0.0.1'))) as FetchBatchResult;
      expect(up.networkDown).toBeUndefined();
      down = true;
      const results: FetchBatchResult[] = [];
      for (const [i, host] of ['127.0.0.2', '127.0.0.3', '127.0.0.4'].entries()) {
        results.push((await new MockActivityEnvironment().run(acts.fetchBatch, grant(2 + i, host))) as FetchBatchResult);
      }
      const last = results[2]!;
      expect(outage.down).toBe(true);
      // Nothing final and nothing counted: both URLs go back for a later grant.
      expect(last.outcomes.filter((o) => o.sent)).toEqual([]);
      expect(last.unused).toHaveLength(2);
      expect(last.networkDown).toBe(true);
      expect(last.missedSlots).toBeGreaterThan(0);
      const scheduledWhileDown = Date.now();
      down = false;
      const back = (await new MockActivityEnvironment({ currentAttemptScheduledTimestampMs: Date.now() }).run(acts.fetchBatch, grant(9, '127.0.0.4'))) as FetchBatchResult;
      expect(back.networkDown).toBeUndefined();
      expect(back.outcomes.filter((o) => o.sent && o.final).length).toBeGreaterThan(0);
      // A grant whose task waited while the network was down (the worker took no fetches then),
      // its window gone by: its wait was the outage's, neither a worker falling behind (no missed
      // slots) nor the trip (no dispatch time for the monitor's lead).
      const late = grant(10, '127.0.0.1');
      late.schedule = { ...late.schedule, startMs: scheduledWhileDown - 400, endMs: scheduledWhileDown - 200, issuedMs: scheduledWhileDown - 500 };
      const waited = (await new MockActivityEnvironment({ currentAttemptScheduledTimestampMs: scheduledWhileDown }).run(acts.fetchBatch, late)) as FetchBatchResult;
      expect(waited.unused).toHaveLength(2);
      expect(waited.missedSlots).toBe(0);
      expect(waited.dispatchMs).toBeUndefined();
      // The same grant had it been scheduled after the outage: a worker behind.
      const behind = (await new MockActivityEnvironment({ currentAttemptScheduledTimestampMs: Date.now() }).run(acts.fetchBatch, { ...late, grantId: 11 })) as FetchBatchResult;
      expect(behind.missedSlots).toBeGreaterThan(0);
      expect(behind.dispatchMs).toBeGreaterThan(0);
    } finally {
      await pipeline.close();
    }
  });

  it('runs one fetch activity at a time while the network is down: the others hand their URLs back at once, their windows free', async () => {
    const { outage, pipeline, acts, grant } = activitiesOnCuttableNetwork('b2', { leadMs: 100, intervalMs: 400, slots: 3 });
    try {
      expect((await pipeline.fetcher.fetch(at('127.0.0.1', '/a.jpg'))).ok).toBe(true);
      down = true;
      for (const host of ['127.0.0.2', '127.0.0.3', '127.0.0.4']) await pipeline.fetcher.fetch(at(host, '/a.jpg'));
      expect(outage.down).toBe(true);
      const env = () => new MockActivityEnvironment({ currentAttemptScheduledTimestampMs: Date.now() });
      const ended: string[] = [];
      const probeGrant = grant(1, '127.0.0.2');
      const probe = (env().run(acts.fetchBatch, probeGrant) as Promise<FetchBatchResult>).finally(() => ended.push('probe'));
      const otherGrant = grant(2, '127.0.0.3');
      const other = (await env().run(acts.fetchBatch, otherGrant)) as FetchBatchResult;
      ended.push('other');
      // The second handed everything back before its first slot, sending nothing; its window is
      // free from its start (a send a spacing before it), so the monitor grants it again at once.
      expect(other.unused).toHaveLength(2);
      expect(other.outcomes).toEqual([]);
      expect(other.lastSendMs).toBe(otherGrant.schedule.startMs - otherGrant.schedule.intervalMs);
      expect(other.networkDown).toBe(true);
      expect(ended).toEqual(['other']);
      // The oldest went on trying in its slots: it learns when the network is back.
      const probed = await probe;
      expect(probed.lastSendMs).toBeGreaterThanOrEqual(probeGrant.schedule.startMs);
      expect(probed.unused).toHaveLength(2);
      expect(probed.networkDown).toBe(true);
      expect(origins.get('127.0.0.2')!.hits('/a.jpg')).toHaveLength(0);
    } finally {
      await pipeline.close();
    }
  });
});
