import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { ROOT, runCli } from '../support/cli';
import { imageOrigin, type Origin } from '../support/origin';
import { S3TestServer } from '../support/s3server';

/** Every key under `prefix` in the bucket, past one page of results. */
async function keysUnder(s3: S3Client, bucket: string, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) keys.push(o.Key!);
    token = page.NextContinuationToken;
  } while (token);
  return keys;
}

// The S3 store's own test drives the store directly; this is the crawl a user runs into it: the
// embedded server, `crawl run`'s own worker, the URL lists, records and thumbnails all in the bucket.
describe('`crawl run` into an S3 store (moto_server on 127.0.0.1, embedded Temporal server, real worker)', () => {
  const server = new S3TestServer();
  let s3: S3Client;
  let origin: Origin;
  let dir: string;
  const bucket = 'crawl-e2e';
  const prefix = 'team/run1/';
  const env = (): NodeJS.ProcessEnv => ({
    TEMPORAL_ADDRESS: '', CRAWL_ALLOW_NETWORKS: '', CRAWL_LOG_LEVEL: 'warn',
    CRAWL_STORE: 's3', CRAWL_S3_BUCKET: bucket, CRAWL_S3_PREFIX: 'team/run1', CRAWL_S3_ENDPOINT: server.endpoint,
    CRAWL_S3_FORCE_PATH_STYLE: 'true', AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'test-key', AWS_SECRET_ACCESS_KEY: 'test-secret-value',
  });

  beforeAll(async () => {
    if (!fs.existsSync(path.join(ROOT, 'dist', 'src', 'cli', 'main.js'))) throw new Error('build first: npm run build (make test does it)');
    await server.start();
    s3 = new S3Client({ region: 'us-east-1', endpoint: server.endpoint, forcePathStyle: true, credentials: { accessKeyId: 'test-key', secretAccessKey: 'test-secret-value' } });
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    origin = await imageOrigin('127.0.0.1');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 's3-crawl-'));
  });
  afterAll(async () => {
    s3?.destroy();
    await origin?.stop();
    await server.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('crawls a manifest to one record per URL and a thumbnail per image in the bucket; a second run asks the site for nothing, and another manifest\'s run sums up its own sources', async () => {
    const urls = [...Array.from({ length: 12 }, (_, i) => origin.url(`/s3/${i}.jpg`)), origin.url('/missing/gone.jpg')];
    const manifest = path.join(dir, 'urls.txt');
    fs.writeFileSync(manifest, `${urls.join('\n')}\n`);
    const out = path.join(dir, 'out');
    const args = ['run', manifest, '--out', out, '--allow-network', '127.0.0.1'];

    const first = await runCli(args, env());
    expect([first.code, first.stderr]).toEqual([0, expect.not.stringContaining('error')]);
    expect(first.stdout).toContain(`thumbnails under thumbnails/ in the S3 store s3://${bucket}/${prefix} at ${server.endpoint}`);
    // Nothing of the crawl went to a local store beside the export and the embedded server's database.
    expect(fs.readdirSync(out).sort()).toEqual(['metadata.ndjson', 'temporal']);
    expect(first.stdout + first.stderr).not.toContain('test-secret-value');

    const records = fs.readFileSync(path.join(out, 'metadata.ndjson'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records.map((r) => r.url).sort()).toEqual([...urls].sort());
    const done = records.filter((r) => r.outcome === 'done');
    expect(done).toHaveLength(12);
    expect(records.find((r) => r.url === origin.url('/missing/gone.jpg'))).toMatchObject({ outcome: 'linkrot', status: 404 });
    for (const r of done) expect(r).toMatchObject({ width: 400, height: 300, format: 'jpeg' });

    // The records and thumbnails are the bucket's, under the prefix: what another machine reads.
    const keys = new Set(await keysUnder(s3, bucket, prefix));
    expect([...keys].every((k) => k.startsWith(prefix))).toBe(true);
    for (const r of done) expect(keys.has(`${prefix}${r.thumbnailKey as string}`)).toBe(true);
    const thumb = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `${prefix}${done[0]!.thumbnailKey as string}` }));
    expect(thumb.ContentType).toBe('image/jpeg');
    expect([...keys].some((k) => k.startsWith(`${prefix}records/`))).toBe(true);

    const asked = origin.hits('/s3/').length;
    expect(asked).toBe(12);
    const second = await runCli(args, env());
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('13 URL(s) already crawled by an earlier run, skipped');
    expect(origin.hits('/s3/').length).toBe(asked);

    expect(first.stdout).toContain(`not done, by reason (commonest first; every URL's record is in metadata.ndjson):\n  127.0.0.1:${origin.port}: 1 linkrot: http 404\n`);
    // Another manifest, of another site, into the same output directory: its summary is its own.
    const other = await imageOrigin('127.0.0.2');
    try {
      fs.writeFileSync(path.join(dir, 'other.txt'), `${other.url('/s3/a.jpg')}\n`);
      const third = await runCli(['run', path.join(dir, 'other.txt'), '--out', out, '--allow-network', '127.0.0.2'], env());
      expect(third.code).toBe(0);
      expect(third.stdout).toContain(`metadata: ${path.join(out, 'metadata.ndjson')} (14 records)`);
      expect(third.stdout).not.toContain('not done, by reason');
    } finally {
      await other.stop();
    }

    // `crawl export` reads the same records from the bucket, on a machine without the output directory.
    const exported = await runCli(['export', '--outcome', 'done'], env());
    expect(exported.code).toBe(0);
    expect(exported.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { url: string }).url).sort()).toEqual([...done.map((r) => r.url as string), `http://127.0.0.2:${other.port}/s3/a.jpg`].sort());
  });
});
