import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type http from 'node:http';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createCrawlActivities } from '../../src/activities/crawlActivities';
import { clearSourceBlocks } from '../../src/activities/sourceBlocks';
import { StoreRecorder } from '../../src/activities/storeRecorder';
import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { Fetcher } from '../../src/pipeline/fetcher';
import { ImagePipeline } from '../../src/pipeline/imagePipeline';
import { Spool } from '../../src/pipeline/spool';
import { LocalStore } from '../../src/pipeline/store';
import type { Connector } from '../../src/pipeline/warmConnections';
import type { FetchBatchResult } from '../../src/shared/types';
import { jpeg } from '../support/images';
import { Origin, redirect } from '../support/origin';

/** A far host on loopback: every new connection takes CONNECT_MS more to open. */
const CONNECT_MS = 120;
/**
 * How late after its slot the origin may log a request: the runner's 10 ms lateness bound plus
 * up to 95 ms before this process's event loop (it also runs the origin) gets to the request on a
 * loaded machine (CI runs logged 47 ms against a bound of 45, and 81 and 89 against 80). Still
 * under CONNECT_MS, so a request that had to open its connection fails.
 */
const LATE_MS = 10 + 95;
const far = (connect: Connector): Connector => (opts, cb) => { setTimeout(() => connect(opts, cb), CONNECT_MS); };

/** A site that closes the connection after every response (keep-alive off). */
function closing(body: Buffer | string, type: string) {
  return (_req: http.IncomingMessage, res: http.ServerResponse) => {
    res.writeHead(200, { 'content-type': type, 'content-length': Buffer.byteLength(body), connection: 'close' });
    res.end(body);
  };
}

/** The full pipeline and activities, every connection of which is a far host's. */
function farPipeline() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawl-preconnect-'));
  const store = new LocalStore(path.join(dir, 'store'));
  const pipeline = new ImagePipeline(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }), store, new Spool(path.join(dir, 'spool')), { wrapConnector: far });
  return { pipeline, acts: createCrawlActivities({ processor: pipeline, recorder: new StoreRecorder(store) }) };
}

describe('connections opened ahead of paced requests (real undici, origin on 127.0.0.1)', () => {
  const origin = new Origin();

  beforeAll(async () => {
    const img = await jpeg(64, 48, 80);
    origin.route('/robots.txt', closing('User-agent: *\nAllow: /\n', 'text/plain'));
    for (let i = 0; i < 4; i++) origin.route(`/close/${i}.jpg`, closing(img, 'image/jpeg'));
    origin.serve('/keep.jpg', img);
    await origin.start();
    // undici's first request in a process compiles its HTTP parser, which on a loaded machine
    // alone takes longer than a request may leave after its slot: not what is tested here. So
    // does the first request with a send-by time (its handler): 18-27 ms, against 3.5 ms after.
    const warmUp = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }));
    await warmUp.fetch(origin.url('/keep.jpg'));
    await warmUp.fetch(origin.url('/keep.jpg'), { sendBy: Date.now() + 60_000 });
    await warmUp.close();
  });
  afterAll(() => origin.stop());
  beforeEach(() => clearSourceBlocks());

  it('crawls a far host that closes every connection, one URL per slot, none sent late', async () => {
    // Every request needs a new connection that takes longer than LATE_MS: without connections
    // opened ahead, each request missed its slot and this host could never be crawled in step
    // with its grant.
    const { pipeline, acts } = farPipeline();
    const intervalMs = 250;
    const startMs = Date.now() + 300;
    const before = origin.requests.length;
    try {
      const result = (await new MockActivityEnvironment().run(acts.fetchBatch, {
        source: 'far', batchId: 'b', grantId: 1, maxAttempts: 1,
        items: [0, 1, 2, 3].map((i) => ({ url: origin.url(`/close/${i}.jpg`), attempt: 1 })),
        // One slot for robots.txt, one per image, and one spare (a saturated machine can wake late).
        schedule: { startMs, endMs: startMs + 6 * intervalMs, intervalMs, burstSlots: 0 },
      })) as FetchBatchResult;
      expect(result.outcomes.map((o) => o.cls)).toEqual(['done', 'done', 'done', 'done']);
      expect(result.unused).toEqual([]);
      const sent = origin.requests.slice(before);
      expect(sent.map((r) => r.path).sort()).toEqual(['/close/0.jpg', '/close/1.jpg', '/close/2.jpg', '/close/3.jpg', '/robots.txt']);
      // Each on a slot of its own: never early, never more than the lateness bound late (+ clock and loopback).
      const slots = sent.map((r) => Math.round((r.atMs - startMs) / intervalMs));
      expect(new Set(slots).size).toBe(5);
      sent.forEach((r, k) => {
        expect(r.atMs).toBeGreaterThanOrEqual(startMs + slots[k]! * intervalMs - 1);
        expect(r.atMs).toBeLessThanOrEqual(startMs + slots[k]! * intervalMs + LATE_MS);
      });
    } finally {
      await pipeline.close();
    }
  });

  it('opens the connection for a redirect\'s next hop at that hop\'s origin', async () => {
    const other = new Origin();
    other.route('/robots.txt', closing('User-agent: *\nAllow: /\n', 'text/plain')).route('/b.jpg', closing(await jpeg(64, 48, 80), 'image/jpeg'));
    await other.start();
    origin.route('/to-other', redirect(other.url('/b.jpg')));
    const { pipeline, acts } = farPipeline();
    const intervalMs = 250;
    const startMs = Date.now() + 300;
    try {
      const result = (await new MockActivityEnvironment().run(acts.fetchBatch, {
        source: 'far', batchId: 'b', grantId: 2, maxAttempts: 1, items: [{ url: origin.url('/to-other'), attempt: 1 }],
        // robots.txt here, the redirect, robots.txt there, the image there; and one spare.
        schedule: { startMs, endMs: startMs + 5 * intervalMs, intervalMs, burstSlots: 0 },
      })) as FetchBatchResult;
      expect(result.outcomes.map((o) => o.cls)).toEqual(['done']);
      const there = other.requests;
      expect(there.map((r) => r.path)).toEqual(['/robots.txt', '/b.jpg']);
      for (const r of there) {
        const slot = Math.round((r.atMs - startMs) / intervalMs);
        expect(r.atMs - (startMs + slot * intervalMs)).toBeLessThanOrEqual(LATE_MS);
      }
    } finally {
      await pipeline.close();
      await other.stop();
    }
  });

  it('opens one connection ahead and the next request uses it; none while one is free', async () => {
    const fetcher = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }), { wrapConnector: far });
    try {
      const url = origin.url('/keep.jpg');
      const connections = origin.connections;
      fetcher.preconnect(url);
      fetcher.preconnect(url); // already opening: not twice
      await new Promise((r) => setTimeout(r, CONNECT_MS + 40));
      expect(origin.connections).toBe(connections + 1);
      const started = Date.now();
      const res = await fetcher.fetch(url, { sendBy: started + 10 });
      expect(res).toMatchObject({ ok: true, status: 200, sent: true });
      expect(Date.now() - started).toBeLessThan(CONNECT_MS); // no connect on the way
      await new Promise((r) => setTimeout(r, 20)); // undici marks the connection free a moment after the body
      fetcher.preconnect(url); // the pool's connection is free again: nothing to open
      await new Promise((r) => setTimeout(r, CONNECT_MS + 40));
      expect(origin.connections).toBe(connections + 1);
      expect(fetcher.warm.opened).toBe(1);
      // The connect time is known now: the lead is twice it plus a margin, not the first-contact second.
      expect(fetcher.warm.leadMs(new URL(url).origin)).toBeGreaterThanOrEqual(2 * CONNECT_MS);
      expect(fetcher.warm.leadMs(new URL(url).origin)).toBeLessThan(1_000);
    } finally {
      await fetcher.close();
    }
  });

  it('opens none for a slot due just after an answer: the connection that carried it is about to be free', async () => {
    // As after robots.txt, whose image takes the next slot: undici marks the connection free a
    // moment after the body, and a second one was opened that nothing used.
    const fetcher = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }), { wrapConnector: far });
    try {
      const url = origin.url('/keep.jpg');
      const connections = origin.connections;
      expect(await fetcher.fetch(url)).toMatchObject({ ok: true, status: 200 });
      fetcher.preconnect(url, Date.now() + 500);
      await new Promise((r) => setTimeout(r, CONNECT_MS + 40));
      expect(origin.connections).toBe(connections + 1);
      expect(fetcher.warm.opened).toBe(1);
    } finally {
      await fetcher.close();
    }
  });

  it('for a slot far ahead, opens the connection only its lead before the slot', async () => {
    const fetcher = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }));
    try {
      const connections = origin.connections;
      fetcher.preconnect(origin.url('/keep.jpg'), Date.now() + 2_500); // first contact: a second's lead
      await new Promise((r) => setTimeout(r, 1_000));
      expect(origin.connections).toBe(connections);
      await new Promise((r) => setTimeout(r, 900));
      expect(origin.connections).toBe(connections + 1);
    } finally {
      await fetcher.close();
    }
  });

  it('after the site closes a connection, opens the next one only its lead before a far slot', async () => {
    // Opened at once, it sat unused until a site with a short idle limit closed it too, and the
    // slot then had to open yet another, late.
    const fetcher = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }));
    try {
      const url = origin.url('/close/1.jpg');
      const slotMs = Date.now() + 2_500;
      fetcher.preconnect(url, slotMs);
      const before = origin.connections;
      // On a connection of its own, which the site closes after the answer.
      expect(await fetcher.fetch(url)).toMatchObject({ ok: true, status: 200 });
      await new Promise((r) => setTimeout(r, 400));
      expect(origin.connections).toBe(before + 1);
      await new Promise((r) => setTimeout(r, slotMs - Date.now()));
      expect(origin.connections).toBe(before + 2);
      // Which connection it took, the count says; the send-by only that it left at once, give
      // or take a stall of the machine (10-15 ms seen on an idle one).
      const started = Date.now();
      expect(await fetcher.fetch(url, { sendBy: started + 50 })).toMatchObject({ ok: true, sent: true });
      expect(origin.connections).toBe(before + 2); // it took the one opened ahead
    } finally {
      await fetcher.close();
    }
  });

  it('opens nothing to a refused address or a bad URL', async () => {
    const fetcher = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }));
    try {
      fetcher.preconnect('http://10.0.0.1/x.jpg');
      fetcher.preconnect('ftp://127.0.0.1/x.jpg');
      fetcher.preconnect('not a url');
      expect(fetcher.warm.opened).toBe(0);
    } finally {
      await fetcher.close();
    }
  });

  it('tries a host that is down once per request: the request gets the failed attempt\'s error', async () => {
    const gone = await new Origin().start();
    const url = gone.url('/x.jpg');
    await gone.stop(); // nothing listens on that port now
    const fetcher = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }));
    try {
      fetcher.preconnect(url);
      await new Promise((r) => setTimeout(r, 50));
      const res = await fetcher.fetch(url);
      expect(res).toMatchObject({ ok: false, failure: 'network', reason: expect.stringMatching(/ECONNREFUSED/) });
      expect(fetcher.warm.opened).toBe(1);
    } finally {
      await fetcher.close();
    }
  });

  it('closes a connection opened ahead that no request took', async () => {
    const fetcher = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }));
    const open = () => origin.openConnections();
    const base = await open();
    fetcher.preconnect(origin.url('/keep.jpg'));
    await new Promise((r) => setTimeout(r, 50));
    expect(await open()).toBe(base + 1);
    await fetcher.close();
    await new Promise((r) => setTimeout(r, 50));
    expect(await open()).toBe(base);
  });
});
