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

  it('shares a 4xx (no rules): the other workers do not ask', async () => {
    await o.route('/robots.txt', (_q, r) => { r.writeHead(404); r.end(); }).start();
    const first = worker();
    await first.check(new URL(o.url('/a.jpg')));
    await first.settled();
    expect((await worker().check(new URL(o.url('/b.jpg')))).verdict.kind).toBe('allowed');
    expect(o.hits('/robots.txt')).toHaveLength(1);
  });

  describe('a robots.txt the site could not serve', () => {
    const unavailable = (tries: number, giveUp = false) => ({ kind: 'unavailable', tries, giveUp, reason: expect.stringContaining('robots.txt answered 503'), retryAtMs: expect.any(Number) });

    it('holds the origin at every worker until it is due, and counts the tries across them: the site is asked three times in all', async () => {
      await o.route('/robots.txt', (_q, r) => { r.writeHead(503); r.end(); }).start();
      const t0 = Date.now();
      let clock = t0;
      const a = worker(() => clock);
      const first = await a.check(new URL(o.url('/a.jpg')));
      expect(first).toEqual({ verdict: unavailable(1), fetched: true });
      await a.settled();
      const dueAt = (first.verdict as { retryAtMs: number }).retryAtMs;

      // Another worker, a minute on: no request, and it asks after the first would have.
      const b = worker(() => t0 + 60_000);
      const held = await b.check(new URL(o.url('/b.jpg')));
      expect(held).toEqual({ verdict: unavailable(1), fetched: false, shared: true });
      expect((held.verdict as { retryAtMs: number }).retryAtMs).toBeGreaterThan(dueAt);
      expect(o.hits('/robots.txt')).toHaveLength(1);

      // Due: the worker that kept it asks (try 2); the others wait out up to 10 s more (the
      // monitors grant every worker at that moment), and read what it kept.
      clock = dueAt;
      const held2 = await worker(() => clock).check(new URL(o.url('/b.jpg')));
      expect(held2).toEqual({ verdict: unavailable(1), fetched: false, shared: true });
      expect((held2.verdict as { retryAtMs: number }).retryAtMs).toBeGreaterThanOrEqual(dueAt + 5_000);
      const second = await a.check(new URL(o.url('/a.jpg')));
      expect(second).toEqual({ verdict: unavailable(2), fetched: true });
      await a.settled();
      const b2 = worker(() => clock + 10_001);
      expect(await b2.check(new URL(o.url('/b.jpg')))).toEqual({ verdict: unavailable(2), fetched: false, shared: true });
      expect(o.hits('/robots.txt')).toHaveLength(2);

      // A worker new to the origin, once that is due, makes the third try and gives up; the
      // one that was waiting for it reads that and gives up too.
      clock = (second.verdict as { retryAtMs: number }).retryAtMs + 10_001;
      const c = worker(() => clock);
      expect((await c.check(new URL(o.url('/c.jpg')))).verdict).toEqual(unavailable(3, true));
      await c.settled();
      clock += 1_000;
      expect(await b2.check(new URL(o.url('/b.jpg')))).toEqual({ verdict: unavailable(3, true), fetched: false, shared: true });
      expect(o.hits('/robots.txt')).toHaveLength(3);
    });

    it('ends the URLs of workers that were waiting for the last try, but a crawl again right after asks afresh', async () => {
      await o.route('/robots.txt', (_q, r) => { r.writeHead(503); r.end(); }).start();
      const twice = pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'], robotsAgent: 'PoliteImageCrawler', robotsMaxTries: 2 });
      let clock = Date.now();
      const on = () => new RobotsCache(fetcher, twice, () => clock, ROBOTS_MAX_ORIGINS, new RobotsShelf(store));
      const a = on();
      const first = await a.check(new URL(o.url('/a.jpg')));
      await a.settled();
      const waiting = on();
      expect((await waiting.check(new URL(o.url('/b.jpg')))).verdict).toEqual(unavailable(1));
      clock = (first.verdict as { retryAtMs: number }).retryAtMs;
      expect((await a.check(new URL(o.url('/a.jpg')))).verdict).toEqual(unavailable(2, true));
      await a.settled();
      clock += 10_001;
      expect(await waiting.check(new URL(o.url('/b.jpg')))).toEqual({ verdict: unavailable(2, true), fetched: false, shared: true });
      expect(o.hits('/robots.txt')).toHaveLength(2);
      // The operator runs the command the summary suggests: a new worker, a new count.
      const again = on();
      expect(await again.check(new URL(o.url('/b.jpg')))).toEqual({ verdict: unavailable(1), fetched: true });
      expect(o.hits('/robots.txt')).toHaveLength(3);
    });

    it('keeps the file once the site serves it again: a worker due later reads it', async () => {
      let up = false;
      await o.route('/robots.txt', (_q, r) => {
        if (!up) { r.writeHead(503, { 'retry-after': '600' }); r.end(); return; }
        r.writeHead(200, { 'content-type': 'text/plain' }); r.end('User-agent: *\nDisallow: /private/\n');
      }).start();
      const t0 = Date.now();
      const a = worker(() => t0);
      const first = await a.check(new URL(o.url('/a.jpg')));
      await a.settled();
      // The site's Retry-After (10 min) holds the other workers too.
      const dueAt = (first.verdict as { retryAtMs: number }).retryAtMs;
      expect(dueAt).toBe(t0 + 600_000);
      const b = worker(() => t0 + 1_000);
      expect((await b.check(new URL(o.url('/b.jpg')))).verdict).toMatchObject({ kind: 'unavailable', tries: 1 });

      up = true;
      const a2 = worker(() => dueAt + 10_001);
      expect((await a2.check(new URL(o.url('/a.jpg')))).verdict.kind).toBe('allowed');
      await a2.settled();
      expect(await worker(() => dueAt + 10_002).check(new URL(o.url('/private/b.jpg')))).toMatchObject({ verdict: { kind: 'disallowed' }, fetched: false, shared: true });
      expect(o.hits('/robots.txt')).toHaveLength(2);
    });

    it('starts a new count when the last failed read was due long ago', async () => {
      await o.route('/robots.txt', (_q, r) => { r.writeHead(503); r.end(); }).start();
      const t0 = Date.now();
      const a = worker(() => t0);
      await a.check(new URL(o.url('/a.jpg')));
      await a.settled();
      // An hour later (a crawl run again after the outage): try 1, not 2.
      expect((await worker(() => t0 + 3600_000).check(new URL(o.url('/b.jpg')))).verdict).toEqual(unavailable(1));
      expect(o.hits('/robots.txt')).toHaveLength(2);
    });

    it('does not keep a failure to reach the site, which may be the worker\'s own network', async () => {
      const gone = await new Origin().start('127.0.0.2');
      const url = new URL(gone.url('/a.jpg'));
      await gone.stop();
      const a = worker();
      expect((await a.check(url)).verdict.kind).toBe('unavailable');
      await a.settled();
      expect(await store.get(robotsKey(url.origin))).toBeUndefined();
    });

    it('does not hold an origin longer than its own read would on an entry that says so', async () => {
      await o.serve('/robots.txt', 'User-agent: *\nAllow: /\n', 'text/plain').start();
      const originOf = o.url('/').replace(/\/$/, '');
      const now = Date.now();
      await store.put(robotsKey(originOf), JSON.stringify({ fetchedAtMs: now, status: 503, unreadable: { reason: 'robots.txt answered 503', tries: 1, retryAtMs: now + 30 * DAY_MS } }), 'application/json');
      const { verdict } = await worker(() => now).check(new URL(o.url('/a.jpg')));
      expect(verdict).toMatchObject({ kind: 'unavailable', tries: 1 });
      expect((verdict as { retryAtMs: number }).retryAtMs).toBeLessThanOrEqual(now + 15 * 60_000 + 10_000);
      // One that is not ours at all is asked past.
      await store.put(robotsKey(originOf), JSON.stringify({ fetchedAtMs: now, status: 503, unreadable: { tries: 'many' } }), 'application/json');
      expect(await worker(() => now).check(new URL(o.url('/a.jpg')))).toEqual({ verdict: { kind: 'allowed' }, fetched: true });
    });
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
