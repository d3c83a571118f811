import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { CreateBucketCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createCrawlActivities, type UrlProcessor } from '../../src/activities/crawlActivities';
import { StoreRecorder } from '../../src/activities/storeRecorder';
import { startCrawl } from '../../src/crawl/start';
import { chunkOf } from '../../src/shared/chunkRanges';
import { batchRunUnit, recordFile } from '../../src/shared/recordUnits';
import type { ChunkRange } from '../../src/shared/types';
import { exportRecords } from '../../src/crawl/exportRecords';
import { originalKey, recordKey } from '../../src/pipeline/keys';
import { S3Store } from '../../src/pipeline/store';
import { readableStore } from '../../src/crawl/storeToRead';
import { describeStoreError } from '../../src/pipeline/storeError';
import { S3TestServer } from '../support/s3server';
import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { Fetcher } from '../../src/pipeline/fetcher';
import { RobotsCache, ROBOTS_MAX_ORIGINS } from '../../src/pipeline/robots';
import { RobotsShelf } from '../../src/pipeline/siteFileShelf';
import { Origin } from '../support/origin';

describe('S3 store against a real S3-protocol server (moto_server on 127.0.0.1)', () => {
  const server = new S3TestServer();
  let store: S3Store;
  const saved = { ...process.env };

  beforeAll(async () => {
    await server.start();
    // Credentials through the standard chain (env), as in production.
    process.env.AWS_ACCESS_KEY_ID = 'test-key';
    process.env.AWS_SECRET_ACCESS_KEY = 'test-secret';
    const admin = new S3Client({ region: 'us-east-1', endpoint: server.endpoint, forcePathStyle: true });
    await admin.send(new CreateBucketCommand({ Bucket: 'crawl' }));
    admin.destroy();
    store = new S3Store({ bucket: 'crawl', prefix: 'run1/', endpoint: server.endpoint, region: 'us-east-1', forcePathStyle: true });
  });
  afterAll(async () => {
    store?.destroy();
    await server.stop();
    process.env = saved;
  });

  it('stores an empty marker without a word on the console (the log is JSON lines)', async () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      await store.put('markers/queued', '', 'text/plain');
      await store.put('markers/done', Buffer.alloc(0), 'text/plain');
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
    expect(await store.get('markers/queued')).toEqual(Buffer.alloc(0));
    expect(await store.get('markers/done')).toEqual(Buffer.alloc(0));
  });

  it('says what to do when the store cannot be used, before a crawl starts', async () => {
    await expect(store.verify()).resolves.toBeUndefined();
    const use = async (cfg: Partial<ConstructorParameters<typeof S3Store>[0]>) => {
      const s = new S3Store({ bucket: 'crawl', endpoint: server.endpoint, region: 'us-east-1', forcePathStyle: true, ...cfg });
      try {
        return await s.verify().then(() => 'usable', (err: Error) => err.message);
      } finally {
        s.destroy();
      }
    };
    expect(await use({ bucket: 'no-such-bucket' })).toBe(`cannot use the S3 store s3://no-such-bucket/ at ${server.endpoint}: bucket "no-such-bucket" does not exist (create it, or correct CRAWL_S3_BUCKET)`);
    const closed = 'http://127.0.0.1:1';
    expect(await use({ endpoint: closed })).toBe(`cannot use the S3 store s3://crawl/ at ${closed}: cannot reach ${closed} (ECONNREFUSED; check CRAWL_S3_ENDPOINT)`);
    // No credentials anywhere in the chain (and no instance metadata service: tests stay on loopback).
    const keep = { ...process.env };
    try {
      for (const k of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE']) delete process.env[k];
      Object.assign(process.env, { AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/credentials', AWS_CONFIG_FILE: '/nonexistent/config', AWS_EC2_METADATA_DISABLED: 'true' });
      expect(await use({})).toMatch(/^cannot use the S3 store s3:\/\/crawl\/ at .*: no AWS credentials found \(set AWS_ACCESS_KEY_ID/);
    } finally {
      process.env = keep;
    }
    // The commands that read the store (export, reasons, again) say it the same way.
    const env = { ...process.env };
    try {
      Object.assign(process.env, { CRAWL_STORE: 's3', CRAWL_S3_BUCKET: 'no-such-bucket', CRAWL_S3_ENDPOINT: server.endpoint, CRAWL_S3_FORCE_PATH_STYLE: 'true', AWS_REGION: 'us-east-1' });
      await expect(readableStore('/nonexistent')).rejects.toThrow(`cannot use the S3 store s3://no-such-bucket/ at ${server.endpoint}: bucket "no-such-bucket" does not exist (create it, or correct CRAWL_S3_BUCKET)`);
      process.env.CRAWL_S3_BUCKET = 'crawl';
      await expect(readableStore('/nonexistent')).resolves.toBeInstanceOf(S3Store);
    } finally {
      process.env = env;
    }
  });

  it('gives up on an endpoint that accepts connections and never answers, instead of waiting for ever', async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((s) => { sockets.push(s); });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const endpoint = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
    const stalled = new S3Store({ bucket: 'crawl', endpoint, region: 'us-east-1', forcePathStyle: true, requestTimeoutMs: 500 });
    try {
      const started = Date.now();
      const failure = await stalled.put('thumbnails/ab/x.jpg', Buffer.from('x'), 'image/jpeg').then(() => undefined, (err: unknown) => err);
      expect(String(failure)).toMatch(/timed? ?out/i);
      // What `crawl status` and `crawl run` say of it.
      expect(describeStoreError(failure)).toBe('the store did not answer within 0.5 s (ETIMEDOUT)');
      // The SDK tries three times; each waits for the request timeout, not for ever.
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      stalled.destroy();
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  it('puts and gets thumbnails under the prefix, and a re-put overwrites the same key', async () => {
    await store.put('thumbnails/ab/cd/x.jpg', Buffer.from('first'), 'image/jpeg');
    await store.put('thumbnails/ab/cd/x.jpg', Buffer.from('second'), 'image/jpeg');
    expect((await store.get('thumbnails/ab/cd/x.jpg'))?.toString()).toBe('second');
    expect(await store.get('thumbnails/none.jpg')).toBeUndefined();
  });

  it('keeps a large original under its sha256 with its format\'s content type', async () => {
    const body = Buffer.alloc(6 * 1024 * 1024, 7);
    const { key, contentType } = originalKey('c'.repeat(64), 'webp');
    await store.put(key, body, contentType);
    expect((await store.get(key))!.equals(body)).toBe(true);
    const admin = new S3Client({ region: 'us-east-1', endpoint: server.endpoint, forcePathStyle: true });
    try {
      const head = await admin.send(new HeadObjectCommand({ Bucket: 'crawl', Key: `run1/${key}` }));
      expect(head).toMatchObject({ ContentType: 'image/webp', ContentLength: body.length });
    } finally {
      admin.destroy();
    }
  });

  it('keeps a robots.txt in the bucket for the other workers, and has none for an origin never read', async () => {
    const site = await new Origin().serve('/robots.txt', 'User-agent: *\nDisallow: /no/\n', 'text/plain').start();
    const cfg = pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] });
    const fetcher = new Fetcher(cfg);
    try {
      const worker = () => new RobotsCache(fetcher, cfg, Date.now, ROBOTS_MAX_ORIGINS, new RobotsShelf(store));
      const first = worker();
      expect(await first.check(new URL(site.url('/no/a.jpg')))).toMatchObject({ verdict: { kind: 'disallowed' }, fetched: true });
      await first.settled();
      expect(await worker().check(new URL(site.url('/no/b.jpg')))).toMatchObject({ verdict: { kind: 'disallowed' }, fetched: false, shared: true });
      expect(site.hits('/robots.txt')).toHaveLength(1);
      expect(await new RobotsShelf(store).read('http://127.0.0.1:1', Date.now(), 86_400_000)).toBeUndefined();
    } finally {
      await fetcher.close();
      await site.stop();
    }
  });

  it('stores metadata records as NDJSON', async () => {
    await new StoreRecorder(store).write('museum.example', 'batch-1-g3', [{ url: 'https://m/1.jpg', outcome: 'done' }, { url: 'https://m/2.jpg', outcome: 'linkrot' }]);
    const text = (await store.get(recordKey('museum.example', 'batch-1-g3')))!.toString();
    expect(text.trim().split('\n').map((l) => JSON.parse(l).outcome)).toEqual(['done', 'linkrot']);
  });

  it('exports the records of a source as one NDJSON stream, as `crawl export` does', async () => {
    const rec = new StoreRecorder(store);
    await rec.write('export.example', 'b1-g2', [{ url: 'https://e/3.jpg' }]);
    await rec.write('export.example', 'b1-g1', [{ url: 'https://e/1.jpg' }, { url: 'https://e/2.jpg' }]);
    let text = '';
    const summary = await exportRecords(store, (t) => { text += t; }, ['export.example']);
    expect(text.split('\n').filter(Boolean).map((l) => JSON.parse(l).url)).toEqual(['https://e/1.jpg', 'https://e/2.jpg', 'https://e/3.jpg']);
    expect(summary).toEqual({ records: 3, units: 2, sourcesWithoutRecords: [], superseded: 0 });
  });

  it('keeps each finished chunk\'s downloaded URLs and marks unfinished ones as queued, so that another manifest started into the bucket leaves them out', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 's3-index-'));
    const url = (i: number) => `https://index.example/${i}.jpg`;
    const start = async (name: string, ids: number[]) => {
      const manifest = path.join(dir, name);
      fs.writeFileSync(manifest, `${ids.map(url).join('\n')}\n`);
      const sent: ChunkRange[] = [];
      const client = { workflow: { signalWithStart: async (_: unknown, o: { signalArgs: [ChunkRange[]] }) => { sent.push(...o.signalArgs[0]); } } } as unknown as Client;
      const summary = await startCrawl({ client, store, manifest, taskQueue: 'q' });
      return { summary, chunks: sent.flatMap((r) => Array.from({ length: r.last - r.first + 1 }, (_, k) => chunkOf(r, r.first + k))) };
    };
    const first = await start('first.txt', [0, 1, 2]);
    const recorder = new StoreRecorder(store);
    const acts = createCrawlActivities({ processor: {} as UrlProcessor, recorder, store });
    for (const c of first.chunks) {
      await recorder.write('index.example', recordFile(batchRunUnit(c.chunkId, '0123456789ab'), 'b', 'g1'),
        [{ url: url(0), outcome: 'done' }, { url: url(1), outcome: 'done' }, { url: url(2), outcome: 'linkrot' }]);
      await acts.markChunkDone(c);
    }
    const second = await start('second.txt', [2, 1, 3, 0]);
    expect(second.summary.downloadedBefore).toBe(2);
    const urls = (await Promise.all(second.chunks.map(async (c) => (await store.get(c.spool!))!.toString().trim().split('\n')))).flat();
    expect(urls).toEqual([url(2), url(3)]);

    // The second's chunk is not crawled yet: a third manifest leaves url(3) to it and sends it along.
    const third = await start('third.txt', [3, 4]);
    expect(third.summary.queuedElsewhere).toBe(1);
    expect(third.chunks.map((c) => c.chunkId)).toEqual([`${third.summary.manifestId}-0`, second.chunks[0]!.chunkId]);
    // Finished with nothing downloaded, it leaves an empty index object, and is no longer queued.
    await recorder.write('index.example', recordFile(batchRunUnit(second.chunks[0]!.chunkId, '0123456789ab'), 'b', 'g1'),
      [{ url: url(2), outcome: 'linkrot' }, { url: url(3), outcome: 'error' }]);
    await acts.markChunkDone(second.chunks[0]!);
    const fourth = await start('fourth.txt', [3, 5]);
    expect([fourth.summary.downloadedBefore, fourth.summary.queuedElsewhere]).toEqual([0, 0]);
    expect(fourth.chunks.map((c) => c.chunkId)).toEqual([`${fourth.summary.manifestId}-0`]);
  });

  it('lists the keys under a prefix past one page of results, relative to its own prefix', async () => {
    const keys = Array.from({ length: 1_005 }, (_, n) => `work/m1/a/chunk-${String(n).padStart(6, '0')}.done`);
    for (let i = 0; i < keys.length; i += 50) await Promise.all(keys.slice(i, i + 50).map((k) => store.put(k, 'x', 'text/plain')));
    await store.put('work/m1/b/chunk-000000.done', 'x', 'text/plain');
    const listed: string[] = [];
    for await (const k of store.list('work/m1/a/chunk-')) listed.push(k);
    expect(listed.sort()).toEqual(keys);
    const none: string[] = [];
    for await (const k of store.list('work/m9/')) none.push(k);
    expect(none).toEqual([]);
    // With the time each was written, by the store's clock (an export --since picks by it).
    const before = Date.now();
    await store.put('work/m1/b/chunk-000000.done', 'again', 'text/plain');
    const written = new Map<string, number>();
    for await (const o of store.listModified('work/m1/')) written.set(o.key, o.modifiedMs);
    expect(written.size).toBe(keys.length + 1);
    // S3 dates objects to the second; the server is on this machine's clock.
    expect(written.get('work/m1/b/chunk-000000.done')).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(written.get('work/m1/b/chunk-000000.done')).toBeLessThanOrEqual(Date.now());
    expect(written.get(keys[0]!)).toBeLessThanOrEqual(written.get('work/m1/b/chunk-000000.done')!);
  });

  it('refuses unsafe keys', async () => {
    await expect(store.put('../escape', 'x', 'text/plain')).rejects.toThrow(/unsafe object key/);
  });

  it('says what it is without leaking credentials', () => {
    expect(store.description).toBe(`S3 store s3://crawl/run1/ at ${server.endpoint}`);
    expect(store.description).not.toContain('test-secret');
  });
});
