import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { buildConnector } from 'undici';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createCrawlActivities } from '../../src/activities/crawlActivities';
import { clearSourceBlocks } from '../../src/activities/sourceBlocks';
import { StoreRecorder } from '../../src/activities/storeRecorder';
import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { ImagePipeline } from '../../src/pipeline/imagePipeline';
import { Spool } from '../../src/pipeline/spool';
import { LocalStore } from '../../src/pipeline/store';
import type { Connector } from '../../src/pipeline/warmConnections';
import type { FetchBatchResult } from '../../src/shared/types';
import { jpeg } from '../support/images';
import { Origin, redirect } from '../support/origin';

/** test/fixtures/tls: a certificate for 127.0.0.1 that this test's connector trusts (see tls.test.ts). */
const TLS = path.resolve(__dirname, '..', 'fixtures', 'tls');
const cert = fs.readFileSync(path.join(TLS, 'cert.pem'));
const key = fs.readFileSync(path.join(TLS, 'key.pem'));

describe('sites that moved (real undici, origins on 127.0.0.1 and 127.0.0.2)', () => {
  const old = new Origin();
  let secure: https.Server;
  let secureBase = '';
  const secureHits: string[] = [];

  beforeAll(async () => {
    const img = await jpeg(64, 48, 80);
    secure = https.createServer({ cert, key }, (req, res) => {
      secureHits.push(req.url ?? '');
      if (req.url === '/robots.txt') { res.writeHead(404); res.end(); return; }
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': img.length });
      res.end(img);
    });
    await new Promise<void>((resolve) => secure.listen(0, '127.0.0.1', resolve));
    secureBase = `https://127.0.0.1:${(secure.address() as AddressInfo).port}`;
    for (let i = 0; i < 10; i++) old.route(`/img/${i}.jpg`, redirect(`${secureBase}/img/${i}.jpg`, 301));
    await old.start();
  });
  afterAll(async () => {
    await old.stop();
    secure.closeAllConnections();
    await new Promise((resolve) => secure.close(resolve));
  });
  beforeEach(() => clearSourceBlocks());

  it('asks the rest of an origin\'s URLs over https after three permanent redirects there: one request per image, not two', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawl-upgrade-'));
    const store = new LocalStore(path.join(dir, 'store'));
    // Verification stays on; only this test's certificate is trusted besides the usual CAs.
    const trusting = buildConnector({ ca: cert, rejectUnauthorized: true }) as unknown as Connector;
    const wrapConnector = (connect: Connector): Connector => (opts, cb) => ((opts as { protocol?: string }).protocol === 'https:' ? trusting(opts, cb) : connect(opts, cb));
    const pipeline = new ImagePipeline(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }), store, new Spool(path.join(dir, 'spool')), { wrapConnector });
    const acts = createCrawlActivities({ processor: pipeline, recorder: new StoreRecorder(store) });
    const startMs = Date.now() + 200;
    // Slots wide enough for each answer to be in before the next slot (the learning is what is tested).
    const intervalMs = 100;
    try {
      const ids = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
      const urls = ids.map((i) => old.url(`/img/${i}.jpg`));
      const result = (await new MockActivityEnvironment().run(acts.fetchBatch, {
        source: 'moved', batchId: 'b', grantId: 1, maxAttempts: 1,
        items: urls.map((url) => ({ url, attempt: 1 })),
        schedule: { startMs, endMs: startMs + 30 * intervalMs, intervalMs, burstSlots: 0 },
      })) as FetchBatchResult;
      expect(result.outcomes.map((o) => o.cls)).toEqual(Array(10).fill('done'));
      expect(result.unused).toEqual([]);
      // robots.txt and three redirects at the old origin (a fourth when the third's answer came
      // after the next slot, on a loaded machine); the rest went straight to https.
      const atOld = old.requests.map((r) => r.path);
      expect(atOld.slice(0, 4)).toEqual(['/robots.txt', '/img/0.jpg', '/img/1.jpg', '/img/2.jpg']);
      expect(atOld.length).toBeLessThanOrEqual(5);
      expect(secureHits.filter((p) => p.startsWith('/img/')).sort()).toEqual(ids.map((i) => `/img/${i}.jpg`).sort());
      const records = fs.readdirSync(path.join(dir, 'store', 'records'), { recursive: true }).filter((f) => String(f).endsWith('.ndjson'))
        .flatMap((f) => fs.readFileSync(path.join(dir, 'store', 'records', String(f)), 'utf8').trim().split('\n').map((l) => JSON.parse(l)));
      const of = (i: number) => records.find((r) => r.url === urls[i]);
      expect(of(0)).toMatchObject({ outcome: 'done', finalUrl: `${secureBase}/img/0.jpg`, redirects: 1 });
      expect(of(9)).toMatchObject({ outcome: 'done', finalUrl: `${secureBase}/img/9.jpg`, redirects: 0 });
    } finally {
      await pipeline.close();
    }
  });

  it('asks on another host once the old one has sent three URLs there (a domain moved, or to www)', async () => {
    const img = await jpeg(64, 48, 80);
    const now = new Origin();
    for (let i = 0; i < 8; i++) now.serve(`/p/${i}.jpg`, img);
    await now.start('127.0.0.2');
    const was = new Origin();
    for (let i = 0; i < 8; i++) was.route(`/p/${i}.jpg`, redirect(now.url(`/p/${i}.jpg`), 308));
    await was.start('127.0.0.1');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawl-moved-'));
    const store = new LocalStore(path.join(dir, 'store'));
    const pipeline = new ImagePipeline(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }), store, new Spool(path.join(dir, 'spool')));
    const acts = createCrawlActivities({ processor: pipeline, recorder: new StoreRecorder(store) });
    const startMs = Date.now() + 200;
    const intervalMs = 100;
    try {
      const result = (await new MockActivityEnvironment().run(acts.fetchBatch, {
        source: 'moved-host', batchId: 'b', grantId: 1, maxAttempts: 1,
        items: [0, 1, 2, 3, 4, 5, 6, 7].map((i) => ({ url: was.url(`/p/${i}.jpg`), attempt: 1 })),
        schedule: { startMs, endMs: startMs + 24 * intervalMs, intervalMs, burstSlots: 0 },
      })) as FetchBatchResult;
      expect(result.outcomes.map((o) => o.cls)).toEqual(Array(8).fill('done'));
      const atOld = was.requests.map((r) => r.path);
      expect(atOld.slice(0, 4)).toEqual(['/robots.txt', '/p/0.jpg', '/p/1.jpg', '/p/2.jpg']);
      expect(atOld.length).toBeLessThanOrEqual(5);
      expect(now.requests.map((r) => r.path).sort()).toEqual(['/robots.txt', ...[0, 1, 2, 3, 4, 5, 6, 7].map((i) => `/p/${i}.jpg`)].sort());
    } finally {
      await pipeline.close();
      await was.stop();
      await now.stop();
    }
  });
});
