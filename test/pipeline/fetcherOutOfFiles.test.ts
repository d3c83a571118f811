import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { Fetcher } from '../../src/pipeline/fetcher';
import { ImagePipeline } from '../../src/pipeline/imagePipeline';
import { RobotsCache } from '../../src/pipeline/robots';
import { Spool } from '../../src/pipeline/spool';
import { LocalStore } from '../../src/pipeline/store';
import type { Connector } from '../../src/pipeline/warmConnections';
import { jpeg } from '../support/images';
import { Origin } from '../support/origin';

/**
 * A worker short of open files: connecting fails with EMFILE, as Node's net does ("connect
 * EMFILE 127.0.0.1:80 - Local (undefined:undefined)"). That is the worker's shortage, not the
 * site's: nothing reached the site, so nothing may count against it (a robots.txt try, an error
 * for its breaker) and the URL waits for a later slot.
 */
describe('a worker out of open files (real undici, origin on 127.0.0.1)', () => {
  const origin = new Origin();
  let shortage = 0;
  const shortOfFiles = (connect: Connector): Connector => (opts, cb) => {
    if (shortage <= 0) return connect(opts, cb);
    shortage--;
    const err = Object.assign(new Error(`connect EMFILE ${opts.hostname}:${opts.port} - Local (undefined:undefined)`), { code: 'EMFILE', syscall: 'connect' });
    setImmediate(() => cb(err, null));
  };
  const cfg = () => pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] });

  beforeAll(async () => {
    origin.serve('/robots.txt', 'User-agent: *\nAllow: /\n', 'text/plain');
    origin.serve('/a.jpg', await jpeg(64, 48, 80));
    await origin.start();
  });
  afterAll(() => origin.stop());

  it('does not send the request, and says why', async () => {
    const fetcher = new Fetcher(cfg(), { wrapConnector: shortOfFiles });
    try {
      shortage = 1;
      const res = await fetcher.fetch(origin.url('/a.jpg'));
      expect(res).toMatchObject({ ok: false, failure: 'late', sent: false });
      expect(res.reason).toMatch(/^not sent: the worker is out of open files \(EMFILE; raise its limit/);
      expect(origin.hits('/a.jpg')).toHaveLength(0);
      // Once a descriptor is free again, the same fetcher goes on.
      expect(await fetcher.fetch(origin.url('/a.jpg'))).toMatchObject({ ok: true, status: 200 });
    } finally {
      await fetcher.close();
    }
  });

  it('counts no robots.txt try, and puts the image back for a later slot instead of failing it against the site', async () => {
    const fetcher = new Fetcher(cfg(), { wrapConnector: shortOfFiles });
    const robots = new RobotsCache(fetcher, cfg());
    try {
      shortage = 1;
      const before = origin.hits('/robots.txt').length;
      expect((await robots.check(new URL(origin.url('/a.jpg')))).verdict).toEqual({ kind: 'pending' });
      expect((await robots.check(new URL(origin.url('/a.jpg')))).verdict).toEqual({ kind: 'allowed' });
      expect(origin.hits('/robots.txt')).toHaveLength(before + 1);
    } finally {
      await fetcher.close();
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawl-out-of-files-'));
    const pipeline = new ImagePipeline(cfg(), new LocalStore(path.join(dir, 'store')), new Spool(path.join(dir, 'spool')), { wrapConnector: shortOfFiles });
    try {
      const ctx = { source: 's', attempt: 1, signal: new AbortController().signal };
      // robots.txt first, in a slot of its own.
      expect(await pipeline.process(origin.url('/a.jpg'), ctx)).toMatchObject({ requeue: true, siteFile: 'robots.txt' });
      shortage = 1;
      const hits = origin.hits('/a.jpg').length;
      const short = await pipeline.process(origin.url('/a.jpg'), ctx);
      expect(short).toMatchObject({ requeue: true, outcome: { cls: 'error', sent: false } });
      expect(origin.hits('/a.jpg')).toHaveLength(hits);
      expect(await pipeline.process(origin.url('/a.jpg'), ctx)).toMatchObject({ outcome: { cls: 'done', status: 200 } });
    } finally {
      await pipeline.close();
    }
  });
});
