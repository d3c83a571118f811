import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createCrawlActivities } from '../../src/activities/crawlActivities';
import { clearSourceBlocks } from '../../src/activities/sourceBlocks';
import { StoreRecorder } from '../../src/activities/storeRecorder';
import { pipelineConfigFromEnv, type PipelineConfig } from '../../src/pipeline/config';
import { ImagePipeline } from '../../src/pipeline/imagePipeline';
import { Spool } from '../../src/pipeline/spool';
import { LocalStore } from '../../src/pipeline/store';
import type { FetchBatchResult } from '../../src/shared/types';
import { png } from '../support/images';
import { Origin } from '../support/origin';
import { readRecords } from '../support/records';

const POLICY = 'https://site.example/policies/tdm.json';

describe('a site\'s TDMRep file, read before its first image (real undici, origin on 127.0.0.1)', () => {
  let img: Buffer;
  beforeAll(async () => { img = await png(64, 48); });
  beforeEach(() => clearSourceBlocks());

  /** Crawls the paths in one grant: a slot each, two for the site's files, and spares. */
  async function crawl(origin: Origin, paths: string[], overrides: Partial<PipelineConfig>, dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawl-tdmrep-'))) {
    const store = new LocalStore(path.join(dir, 'store'));
    const pipeline = new ImagePipeline(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'], ...overrides }), store, new Spool(path.join(dir, 'spool')));
    const acts = createCrawlActivities({ processor: pipeline, recorder: new StoreRecorder(store) });
    const intervalMs = 60;
    const startMs = Date.now() + 50;
    try {
      const result = (await new MockActivityEnvironment().run(acts.fetchBatch, {
        source: 'tdm', batchId: 'b', grantId: 1, maxAttempts: 1,
        items: paths.map((p) => ({ url: origin.url(p), attempt: 1 })),
        schedule: { startMs, endMs: startMs + (2 * paths.length + 6) * intervalMs, intervalMs, burstSlots: 0 },
      })) as FetchBatchResult;
      const records = new Map(readRecords(dir).map((r) => [new URL(String(r.url)).pathname, r]));
      return { result, records, intervalMs };
    } finally {
      await Promise.all([pipeline.robots.settled(), pipeline.tdmRep?.settled()]);
      await pipeline.close();
    }
  }

  it('records each image\'s reservation and policy from the first rule that matches, the response\'s own header first', async () => {
    const origin = new Origin()
      .serve('/.well-known/tdmrep.json', JSON.stringify([
        { location: '/open/', 'tdm-reservation': 0 },
        { location: '/', 'tdm-reservation': 1, 'tdm-policy': POLICY },
      ]), 'application/json')
      .serve('/reserved/a.png', img, 'image/png')
      .serve('/open/b.png', img, 'image/png')
      .route('/header/c.png', (_q, r) => { r.writeHead(200, { 'content-type': 'image/png', 'tdm-reservation': '0' }); r.end(img); });
    await origin.start();
    try {
      const { result, records, intervalMs } = await crawl(origin, ['/reserved/a.png', '/open/b.png', '/header/c.png'], { readTdmRep: true });
      expect(result.outcomes.map((o) => o.cls)).toEqual(['done', 'done', 'done']);
      expect(records.get('/reserved/a.png')).toMatchObject({ tdmReservation: true, tdmPolicy: POLICY });
      expect(records.get('/open/b.png')).toMatchObject({ tdmReservation: false, tdmPolicy: null });
      // The header supersedes the file's reservation; the file's policy stays.
      expect(records.get('/header/c.png')).toMatchObject({ tdmReservation: false, tdmPolicy: POLICY });
      // Read once, after robots.txt and before the first image, each in a slot of its own.
      expect(origin.requests.map((r) => r.path)).toEqual(['/robots.txt', '/.well-known/tdmrep.json', '/reserved/a.png', '/open/b.png', '/header/c.png']);
      // (A late first slot moves the rest of the grant later: gaps, not slot numbers, tell.)
      const at = origin.requests.map((r) => r.atMs);
      for (let k = 1; k < at.length; k++) expect(at[k]! - at[k - 1]!).toBeGreaterThan(intervalMs / 2);
    } finally {
      await origin.stop();
    }
  });

  it('leaves the reservation unset where the site has no file, or one that is not a TDMRep file', async () => {
    for (const file of [undefined, '<!doctype html><title>Not found</title>', '{"location": "/", "tdm-reservation": 1}']) {
      const origin = new Origin().serve('/a.png', img, 'image/png');
      if (file !== undefined) origin.serve('/.well-known/tdmrep.json', file, 'text/html');
      await origin.start();
      try {
        const { records } = await crawl(origin, ['/a.png'], { readTdmRep: true });
        expect(records.get('/a.png')).toMatchObject({ outcome: 'done', tdmReservation: null, tdmPolicy: null });
        expect(origin.requests.map((r) => r.path)).toEqual(['/robots.txt', '/.well-known/tdmrep.json', '/a.png']);
      } finally {
        await origin.stop();
      }
    }
  });

  it('reads the file another worker kept in the store, without a request, and gives the first image its slot; a file the site could not serve is asked for again', async () => {
    let status = 200;
    const origin = new Origin()
      .route('/.well-known/tdmrep.json', (_q, r) => { r.writeHead(status, { 'content-type': 'application/json' }); r.end(JSON.stringify([{ location: '/', 'tdm-reservation': 1, 'tdm-policy': POLICY }])); })
      .serve('/a.png', img, 'image/png')
      .serve('/b.png', img, 'image/png');
    await origin.start();
    try {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawl-tdmrep-'));
      await crawl(origin, ['/a.png'], { readTdmRep: true }, dir);
      origin.requests.length = 0;
      const { records } = await crawl(origin, ['/b.png'], { readTdmRep: true }, dir);
      expect(records.get('/b.png')).toMatchObject({ outcome: 'done', tdmReservation: true, tdmPolicy: POLICY });
      // robots.txt and tdmrep.json both from the store.
      expect(origin.requests.map((r) => r.path)).toEqual(['/b.png']);

      status = 503;
      const other = fs.mkdtempSync(path.join(os.tmpdir(), 'crawl-tdmrep-'));
      await crawl(origin, ['/a.png'], { readTdmRep: true }, other);
      await crawl(origin, ['/b.png'], { readTdmRep: true }, other);
      expect(origin.hits('/.well-known/tdmrep.json')).toHaveLength(2);
    } finally {
      await origin.stop();
    }
  });

  it('does not ask for the file unless CRAWL_READ_TDMREP is set', async () => {
    const origin = new Origin()
      .serve('/.well-known/tdmrep.json', JSON.stringify([{ location: '/', 'tdm-reservation': 1 }]), 'application/json')
      .serve('/a.png', img, 'image/png');
    await origin.start();
    try {
      const { records } = await crawl(origin, ['/a.png'], {});
      expect(records.get('/a.png')).toMatchObject({ outcome: 'done', tdmReservation: null });
      expect(origin.requests.map((r) => r.path)).toEqual(['/robots.txt', '/a.png']);
    } finally {
      await origin.stop();
    }
  });
});
