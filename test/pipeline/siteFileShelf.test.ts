import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { Fetcher } from '../../src/pipeline/fetcher';
import { RobotsCache, ROBOTS_MAX_ORIGINS } from '../../src/pipeline/robots';
import { robotsKey, RobotsShelf } from '../../src/pipeline/siteFileShelf';
import { LocalStore, type ObjectStore } from '../../src/pipeline/store';
import { Origin, redirect } from '../support/origin';

const DAY_MS = 24 * 3600_000;

describe('robots.txt kept in the store for every worker of a crawl', () => {
  const cfg = pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'], robotsAgent: 'PoliteImageCrawler' });
  const fetcher = new Fetcher(cfg);
  let store: LocalStore;
  let o: Origin;
  afterAll(() => fetcher.close());
  beforeEach(() => {
    store = new LocalStore(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'crawl-shelf-')), 'store'));
    o = new Origin();
  });
  afterEach(() => o.stop());

  /** A worker's robots.txt cache over the shared store, on a clock of its own. */
  const worker = (now: () => number = Date.now, on: ObjectStore = store) => new RobotsCache(fetcher, cfg, now, ROBOTS_MAX_ORIGINS, new RobotsShelf(on));

  it('reads a file another worker fetched from the store, Crawl-delay and rules included, without asking the site', async () => {
    await o.serve('/robots.txt', 'User-agent: *\nDisallow: /private/\nCrawl-delay: 3\n', 'text/plain').start();
    const first = worker();
    expect(await first.check(new URL(o.url('/a.jpg')))).toEqual({ verdict: { kind: 'allowed' }, fetched: true });
    await first.settled();

    const second = worker();
    // Looked for ahead of the slot, as the activity's preconnect does.
    second.warm(o.url('/').replace(/\/$/, ''));
    expect(await second.check(new URL(o.url('/private/b.jpg')))).toEqual({ verdict: { kind: 'disallowed', reason: 'robots.txt disallows /private/b.jpg' }, fetched: false, shared: true });
    expect(second.crawlDelayMs(new URL(o.url('/c.jpg')))).toBe(3_000);
    expect(second.cachedVerdict(new URL(o.url('/c.jpg')))).toEqual({ kind: 'allowed' });
    expect(o.hits('/robots.txt')).toHaveLength(1);
  });

  it('shares a 4xx (no rules), but not a 5xx: each worker asks again for a file the site could not serve', async () => {
    await o.route('/robots.txt', (_q, r) => { r.writeHead(404); r.end(); }).start();
    const first = worker();
    await first.check(new URL(o.url('/a.jpg')));
    await first.settled();
    expect((await worker().check(new URL(o.url('/b.jpg')))).verdict.kind).toBe('allowed');
    expect(o.hits('/robots.txt')).toHaveLength(1);

    const other = new Origin();
    try {
      await other.route('/robots.txt', (_q, r) => { r.writeHead(503); r.end(); }).start('127.0.0.2');
      const a = worker();
      expect((await a.check(new URL(other.url('/a.jpg')))).verdict.kind).toBe('unavailable');
      await a.settled();
      expect((await worker().check(new URL(other.url('/a.jpg')))).verdict.kind).toBe('unavailable');
      expect(other.hits('/robots.txt')).toHaveLength(2);
    } finally {
      await other.stop();
    }
  });

  it('asks the site again once the kept file is 24 hours old, and keeps the new one', async () => {
    let rules = 'User-agent: *\nDisallow: /old/\n';
    await o.route('/robots.txt', (_q, r) => { r.writeHead(200, { 'content-type': 'text/plain' }); r.end(rules); }).start();
    const t0 = Date.now();
    const first = worker(() => t0);
    await first.check(new URL(o.url('/a.jpg')));
    await first.settled();
    rules = 'User-agent: *\nDisallow: /new/\n';

    const dayLater = worker(() => t0 + DAY_MS + 1);
    expect(await dayLater.check(new URL(o.url('/old/a.jpg')))).toEqual({ verdict: { kind: 'allowed' }, fetched: true });
    await dayLater.settled();
    expect(o.hits('/robots.txt')).toHaveLength(2);
    // A third worker gets the newer file, not the expired one.
    expect((await worker(() => t0 + DAY_MS + 2).check(new URL(o.url('/new/a.jpg')))).verdict.kind).toBe('disallowed');
    expect(o.hits('/robots.txt')).toHaveLength(2);
  });

  it('spreads the workers\' asking again near the end of the day: the first to find the file expired keeps a new one for the rest', async () => {
    await o.serve('/robots.txt', 'User-agent: *\nAllow: /\n', 'text/plain').start();
    const t0 = Date.now();
    const first = worker(() => t0);
    await first.check(new URL(o.url('/a.jpg')));
    await first.settled();
    // 20 workers looking 23.5 h on: each takes the file for up to an hour less than a day, so
    // some find it expired; the first of them asks the site, and the others read its new file.
    for (let i = 0; i < 20; i++) {
      const w = worker(() => t0 + DAY_MS - 1_800_000 + i);
      expect((await w.check(new URL(o.url(`/b${i}.jpg`)))).verdict.kind).toBe('allowed');
      await w.settled();
    }
    expect(o.hits('/robots.txt')).toHaveLength(2);
  });

  it('asks the site when the kept entry is damaged or the store cannot be read, and loses nothing else', async () => {
    await o.serve('/robots.txt', 'User-agent: *\nDisallow: /private/\n', 'text/plain').start();
    const originOf = o.url('/').replace(/\/$/, '');
    await store.put(robotsKey(originOf), '{"fetchedAtMs": "yesterday", "rules": 42}', 'application/json');
    expect(await worker().check(new URL(o.url('/private/a.jpg')))).toMatchObject({ verdict: { kind: 'disallowed' }, fetched: true });

    const broken: ObjectStore = {
      description: 'a store that fails',
      put: () => Promise.reject(new Error('EIO: write failed')),
      get: () => Promise.reject(new Error('EIO: read failed')),
      list: () => { throw new Error('not used'); },
    };
    const w = worker(Date.now, broken);
    expect(await w.check(new URL(o.url('/private/b.jpg')))).toMatchObject({ verdict: { kind: 'disallowed' }, fetched: true });
    await w.settled();
    expect(o.hits('/robots.txt')).toHaveLength(2);
  });

  it('asks the site when the store does not answer in time, instead of holding the origin', async () => {
    await o.serve('/robots.txt', 'User-agent: *\nDisallow: /private/\n', 'text/plain').start();
    const hanging: ObjectStore = {
      description: 'a store that never answers',
      put: () => new Promise(() => {}),
      get: () => new Promise(() => {}),
      list: () => { throw new Error('not used'); },
    };
    const w = new RobotsCache(fetcher, cfg, Date.now, ROBOTS_MAX_ORIGINS, new RobotsShelf(hanging, 200));
    const started = Date.now();
    expect(await w.check(new URL(o.url('/private/a.jpg')))).toMatchObject({ verdict: { kind: 'disallowed' }, fetched: true });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(o.hits('/robots.txt')).toHaveLength(1);
  });

  it('keeps a file redirected to another origin\'s robots.txt (a site moved to https) for both origins', async () => {
    const moved = await new Origin().serve('/robots.txt', 'User-agent: *\nDisallow: /no/\n', 'text/plain').start('127.0.0.2');
    try {
      await o.route('/robots.txt', redirect(moved.url('/robots.txt'), 301)).start();
      const first = worker();
      const old = new URL(o.url('/no/a.jpg'));
      await first.check(old, undefined, Date.now() + 5_000); // the redirect, a request of its own
      expect((await first.check(old, undefined, Date.now() + 5_000)).verdict.kind).toBe('disallowed');
      await first.settled();
      const second = worker();
      expect(await second.check(new URL(moved.url('/no/b.jpg')))).toMatchObject({ verdict: { kind: 'disallowed' }, fetched: false, shared: true });
      expect(await second.check(new URL(o.url('/no/b.jpg')))).toMatchObject({ verdict: { kind: 'disallowed' }, fetched: false, shared: true });
      expect(moved.hits('/robots.txt')).toHaveLength(1);
      expect(o.hits('/robots.txt')).toHaveLength(1);
    } finally {
      await moved.stop();
    }
  });

  it('looks in the store once for URLs of a new origin checked at the same time, and sends nothing', async () => {
    await o.serve('/robots.txt', 'User-agent: *\nAllow: /\n', 'text/plain').start();
    const first = worker();
    await first.check(new URL(o.url('/a.jpg')));
    await first.settled();
    const reads = jest.spyOn(store, 'get');
    const second = worker();
    const [a, b] = await Promise.all([second.check(new URL(o.url('/b.jpg'))), second.check(new URL(o.url('/c.jpg')))]);
    expect(a).toEqual({ verdict: { kind: 'allowed' }, fetched: false, shared: true });
    // The other waits its turn as it did while a fetch was under way.
    expect(b.fetched).toBe(false);
    expect(reads).toHaveBeenCalledTimes(1);
    expect(o.hits('/robots.txt')).toHaveLength(1);
  });
});
