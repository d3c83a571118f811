import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type PipelineConfig, pipelineConfigFromEnv } from '../../src/pipeline/config';
import { ImagePipeline } from '../../src/pipeline/imagePipeline';
import { Spool } from '../../src/pipeline/spool';
import { LocalStore } from '../../src/pipeline/store';
import sharp from 'sharp';
import { gradient, jpeg } from '../support/images';
import { Origin } from '../support/origin';

// A worker that cannot analyse as fast as its slots come must not keep downloading: the bytes
// would pile up in memory. Past its backlog it sends nothing and hands the URL back.
describe.each([
  ['images', { maxBacklog: 1 }],
  ['bytes', { maxBacklogBytes: 1_000 }], // one thumbnail-sized JPEG is more than that
])('ImagePipeline analysis backlog in %s (real undici, sharp, local store)', (_what, limit) => {
  const origin = new Origin();
  let pipeline: ImagePipeline;
  let releaseStore!: () => void;
  let storeEntered!: () => void;

  beforeAll(async () => {
    const img = await jpeg(200, 100, 80);
    expect(img.length).toBeGreaterThan(1_000);
    origin.serve('/robots.txt', 'User-agent: *\nAllow: /\n', 'text/plain').serve('/one.jpg', img).serve('/two.jpg', img);
    await origin.start();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'backlog-'));
    const local = new LocalStore(path.join(dir, 'store'));
    // The first thumbnail's store write waits until the test lets it go.
    const blocked = new Promise<void>((r) => { releaseStore = r; });
    let first = true;
    const store = {
      description: 'blocking test store',
      get: (k: string) => local.get(k),
      list: (p: string) => local.list(p),
      put: async (k: string, b: Buffer | string, t: string) => {
        if (first && k.startsWith('thumbnails/')) { first = false; storeEntered(); await blocked; }
        return local.put(k, b, t);
      },
    };
    pipeline = new ImagePipeline(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'], ...limit }), store, new Spool(path.join(dir, 'spool')));
  });
  afterAll(async () => { await pipeline.close(); await origin.stop(); });

  it('hands a URL back unsent while its backlog is full, and sends it once it has caught up', async () => {
    await pipeline.process(origin.url('/robots.txt'), ctx); // the host's robots.txt, out of the way
    const entered = new Promise<void>((r) => { storeEntered = r; });
    const one = pipeline.process(origin.url('/one.jpg'), ctx);
    await entered; // /one.jpg downloaded and being stored: the backlog is full
    const busy = await pipeline.process(origin.url('/two.jpg'), ctx);
    expect(busy).toMatchObject({ requeue: true, outcome: { sent: false, reason: expect.stringMatching(/worker busy/) } });
    expect(origin.hits('/two.jpg')).toHaveLength(0);
    releaseStore();
    expect((await one).outcome.cls).toBe('done');
    expect((await pipeline.process(origin.url('/two.jpg'), ctx)).outcome.cls).toBe('done');
    expect(origin.hits('/two.jpg')).toHaveLength(1);
  });
});

const ctx = { source: 's', attempt: 1, signal: new AbortController().signal };

// A site of slow images at a high rate must not fill the worker's backlog alone.
describe('ImagePipeline analysis backlog between sources (real undici, sharp, local store)', () => {
  const origin = new Origin();
  let pipeline: ImagePipeline;

  beforeAll(async () => {
    const img = await jpeg(200, 100, 80);
    origin.serve('/robots.txt', 'User-agent: *\nAllow: /\n', 'text/plain');
    for (const name of ['a1', 'a2', 'a3', 'a4', 'b1']) origin.serve(`/${name}.jpg`, img);
    await origin.start();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'backlog-shared-'));
    pipeline = new ImagePipeline(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'], maxBacklog: 4 }),
      new LocalStore(path.join(dir, 'store')), new Spool(path.join(dir, 'spool')));
    await pipeline.process(origin.url('/robots.txt'), ctx);
  });
  afterAll(async () => { await pipeline.close(); await origin.stop(); });

  it('refuses a source holding three quarters of it, and takes another source\'s image meanwhile', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => { open = r; });
    let waiting = 0;
    const use = pipeline.imageSlots.use.bind(pipeline.imageSlots);
    // Source a's images stay in the backlog (as slow images do) until the test lets them go.
    jest.spyOn(pipeline.imageSlots, 'use').mockImplementation(async (source, fn) => {
      if (source === 'a') { waiting++; await gate; }
      return use(source, fn);
    });
    const held = ['/a1.jpg', '/a2.jpg', '/a3.jpg'].map((p) => pipeline.process(origin.url(p), { ...ctx, source: 'a' }));
    while (waiting < 3) await new Promise((r) => setTimeout(r, 5));
    // Admitted, it would wait behind the gate too: a time limit makes that a failure, not a hang.
    const refused = await Promise.race([pipeline.process(origin.url('/a4.jpg'), { ...ctx, source: 'a' }), new Promise((r) => setTimeout(() => r('admitted'), 3_000))]);
    expect(refused).toMatchObject({ requeue: true, outcome: { sent: false, reason: 'worker busy: this source has three quarters of the analysis backlog' } });
    expect(origin.hits('/a4.jpg')).toHaveLength(0);
    expect((await pipeline.process(origin.url('/b1.jpg'), { ...ctx, source: 'b' })).outcome.cls).toBe('done');
    open();
    expect((await Promise.all(held)).map((r) => r.outcome.cls)).toEqual(['done', 'done', 'done']);
    expect((await pipeline.process(origin.url('/a4.jpg'), { ...ctx, source: 'a' })).outcome.cls).toBe('done');
  });
});

/**
 * For one describe block: an origin serving `count` identical JPEGs (robots.txt already fetched)
 * and a pipeline with `overrides`.
 */
function imagesAndPipeline(count: number, width: number, height: number, overrides: Partial<PipelineConfig>, format: 'jpg' | 'avif' = 'jpg') {
  const origin = new Origin();
  const env = { pipeline: undefined as unknown as ImagePipeline, urls: [] as string[] };
  beforeAll(async () => {
    const img = format === 'jpg' ? await jpeg(width, height, 80) : await sharp(await gradient(width, height)).avif().toBuffer();
    origin.serve('/robots.txt', 'User-agent: *\nAllow: /\n', 'text/plain');
    for (let n = 1; n <= count; n++) origin.serve(`/${n}.${format}`, img, `image/${format === 'jpg' ? 'jpeg' : format}`);
    await origin.start();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pipeline-'));
    env.pipeline = new ImagePipeline(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'], ...overrides }),
      new LocalStore(path.join(dir, 'store')), new Spool(path.join(dir, 'spool')));
    env.urls = Array.from({ length: count }, (_, i) => origin.url(`/${i + 1}.${format}`));
    await env.pipeline.process(origin.url('/robots.txt'), ctx);
  });
  afterAll(async () => { await env.pipeline.close(); await origin.stop(); });
  return env;
}

/** Records the weight of each decode that waits for the budget for larger images, and the most of it in use. */
function watchDecodes(pipeline: ImagePipeline): { weights: number[]; most: number } {
  const seen = { weights: [] as number[], most: 0 };
  const use = pipeline.decodeBudget.use.bind(pipeline.decodeBudget);
  jest.spyOn(pipeline.decodeBudget, 'use').mockImplementation((w, fn) => {
    seen.weights.push(w);
    return use(w, async () => { seen.most = Math.max(seen.most, pipeline.decodeBudget.inUse); return fn(); });
  });
  return seen;
}

// Decoding for thumbnails is bounded by pixels across the worker (memory), not by image count.
describe('ImagePipeline decode budget (real undici, sharp, local store)', () => {
  const env = imagesAndPipeline(3, 800, 600, { maxDecodePixels: 500_000 });

  it('weighs each thumbnail by its pixels and decodes no more at once than the budget', async () => {
    const { pipeline } = env;
    const decodes = watchDecodes(pipeline);
    const results = await Promise.all(env.urls.map((url) => pipeline.process(url, ctx)));
    expect(results.map((r) => r.outcome.cls)).toEqual(['done', 'done', 'done']);
    expect(decodes.weights).toEqual([480_000, 480_000, 480_000]);
    // One at a time in the nine tenths of the budget kept for larger images (450,000): two would be 960,000.
    expect(decodes.most).toBe(450_000);
  });
});

// An AVIF's decode holds ~19 bytes a pixel, not 4: a source of large AVIFs at four 100-megapixel
// decodes at once took a worker to 6.5 GB.
describe('ImagePipeline decode budget for AVIF (real undici, sharp, local store)', () => {
  const env = imagesAndPipeline(2, 400, 300, { maxDecodePixels: 1_000_000 }, 'avif');

  it('weighs an AVIF thumbnail at five times its pixels, so that two of these are decoded one at a time', async () => {
    const { pipeline } = env;
    const decodes = watchDecodes(pipeline);
    const results = await Promise.all(env.urls.map((url) => pipeline.process(url, ctx)));
    expect(results.map((r) => r.outcome.cls)).toEqual(['done', 'done']);
    expect(decodes.weights).toEqual([600_000, 600_000]);
    expect(decodes.most).toBe(600_000);
  });
});

// A budget-sized image decodes alone; the small images of other sources must not wait behind it.
describe('ImagePipeline decode budget for small images (real undici, sharp, local store)', () => {
  const env = imagesAndPipeline(1, 1000, 900, { maxDecodePixels: 1_000_000 });
  const small = new Origin();
  beforeAll(async () => {
    small.serve('/robots.txt', 'User-agent: *\nAllow: /\n', 'text/plain').serve('/small.jpg', await jpeg(80, 60, 80));
    await small.start();
  });
  afterAll(() => small.stop());

  it('decodes a small image while a large one holds the budget', async () => {
    const { pipeline } = env;
    let smallDone = false;
    let smallDoneDuringLarge = false;
    const use = pipeline.decodeBudget.use.bind(pipeline.decodeBudget);
    jest.spyOn(pipeline.decodeBudget, 'use').mockImplementation((w, fn) => use(w, async () => {
      // Holds the large decode (900,000 of 900,000) until the small image is through, or 3 s.
      for (let waited = 0; !smallDone && waited < 3_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
      smallDoneDuringLarge = smallDone;
      return fn();
    }));
    await pipeline.process(small.url('/robots.txt'), { ...ctx, source: 'small' });
    const large = pipeline.process(env.urls[0]!, { ...ctx, source: 'large' });
    await new Promise((r) => setTimeout(r, 200));
    const quick = await pipeline.process(small.url('/small.jpg'), { ...ctx, source: 'small' });
    smallDone = true;
    expect(quick.outcome.cls).toBe('done');
    expect((await large).outcome.cls).toBe('done');
    expect(smallDoneDuringLarge).toBe(true);
  });
});

// Images in sharp at once are bounded by count too: more than a few only adds memory.
describe('ImagePipeline image concurrency (real undici, sharp, local store)', () => {
  const env = imagesAndPipeline(5, 400, 300, { imageConcurrency: 2 });

  it('has no more images in analysis and thumbnailing at once than configured', async () => {
    const { pipeline } = env;
    let inSharp = 0;
    let most = 0;
    const use = pipeline.imageSlots.use.bind(pipeline.imageSlots);
    // Analysis and the thumbnail decode each run in an image slot: count how many are there at
    // once, and hold each a little so that all five would overlap without the limit.
    jest.spyOn(pipeline.imageSlots, 'use').mockImplementation((source, fn) => use(source, async () => {
      inSharp += 1;
      most = Math.max(most, inSharp);
      try {
        await new Promise((r) => setTimeout(r, 50));
        return await fn();
      } finally {
        inSharp -= 1;
      }
    }));
    const results = await Promise.all(env.urls.map((url) => pipeline.process(url, ctx)));
    expect(results.map((r) => r.outcome.cls)).toEqual(['done', 'done', 'done', 'done', 'done']);
    expect(most).toBe(2);
  });
});
