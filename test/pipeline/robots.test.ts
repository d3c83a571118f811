import dns from 'node:dns';
import type http from 'node:http';
import { gzipSync } from 'node:zlib';
import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { Fetcher } from '../../src/pipeline/fetcher';
import { RobotsCache } from '../../src/pipeline/robots';
import { drip, Origin, redirect } from '../support/origin';

// robots-parser's class, whose matcher the hostile-file test counts calls of.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const RobotsPrototype = (require('robots-parser/Robots') as { prototype: { isAllowed(url: string, ua?: string): boolean } }).prototype;

describe('robots.txt (RFC 9309) per origin', () => {
  const cfg = pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'], userAgent: 'PoliteImageCrawler/0.1 (+https://example.org/bot)', robotsAgent: 'PoliteImageCrawler' });
  const fetcher = new Fetcher(cfg);
  afterAll(() => fetcher.close());

  async function withRobots(route: (o: Origin) => Origin, fn: (o: Origin, cache: RobotsCache) => Promise<void>) {
    const o = await route(new Origin()).start();
    try {
      await fn(o, new RobotsCache(fetcher, cfg));
    } finally {
      await o.stop();
    }
  }

  it('obeys the group for our product token and caches the file', async () => {
    await withRobots((o) => o.serve('/robots.txt', 'User-agent: PoliteImageCrawler\nDisallow: /no/\n\nUser-agent: *\nDisallow: /\n', 'text/plain'), async (o, cache) => {
      expect((await cache.check(new URL(o.url('/no/a.jpg')))).verdict.kind).toBe('disallowed');
      expect((await cache.check(new URL(o.url('/yes/a.jpg')))).verdict.kind).toBe('allowed');
      expect(o.hits('/robots.txt')).toHaveLength(1);
    });
  });

  it('obeys the group for the crawler named in a browser-styled User-Agent (Mozilla/5.0 (compatible; Name/1.0; ...)), set in the environment', async () => {
    const saved = process.env.CRAWL_USER_AGENT;
    process.env.CRAWL_USER_AGENT = 'Mozilla/5.0 (compatible; MuseumBot/2.1; +https://museum.example/bot)';
    const browserStyled = pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] });
    if (saved === undefined) delete process.env.CRAWL_USER_AGENT; else process.env.CRAWL_USER_AGENT = saved;
    const o = await new Origin().serve('/robots.txt', 'User-agent: MuseumBot\nDisallow: /\n\nUser-agent: Mozilla\nAllow: /\n', 'text/plain').start();
    try {
      const cache = new RobotsCache(fetcher, browserStyled);
      expect((await cache.check(new URL(o.url('/a.jpg')))).verdict.kind).toBe('disallowed');
    } finally {
      await o.stop();
    }
  });

  it('obeys a group whose User-agent line says more than our product token, as Google\'s parser reads it, and its Crawl-delay', async () => {
    await withRobots((o) => o.serve('/robots.txt', 'User-agent: PoliteImageCrawler (image crawl, see below)\nCrawl-delay: 4\nDisallow: /no/\n\nUser-agent: *\nAllow: /\n', 'text/plain'), async (o, cache) => {
      expect((await cache.check(new URL(o.url('/no/a.jpg')))).verdict.kind).toBe('disallowed');
      expect(cache.crawlDelayMs(new URL(o.url('/yes/a.jpg')))).toBe(4_000);
    });
  });

  it('compares paths with unreserved characters decoded (RFC 9309): /%7Euser/ is /~user/, /a%2Fb is not /a/b', async () => {
    await withRobots((o) => o.serve('/robots.txt', 'User-agent: *\nDisallow: /%7Euser/\nDisallow: /~admin/\nDisallow: /a%2Fb\n', 'text/plain'), async (o, cache) => {
      expect((await cache.check(new URL(o.url('/~user/a.jpg')))).verdict.kind).toBe('disallowed');
      expect((await cache.check(new URL(o.url('/%7eadmin/a.jpg')))).verdict.kind).toBe('disallowed');
      expect((await cache.check(new URL(o.url('/a/b.jpg')))).verdict.kind).toBe('allowed');
      expect((await cache.check(new URL(o.url('/a%2Fb.jpg')))).verdict.kind).toBe('disallowed');
    });
  });

  it('reads a robots.txt sent after an interim 103 Early Hints, in a request slot with a send-by time', async () => {
    await withRobots((o) => o.route('/robots.txt', (_q, r) => {
      r.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
      r.writeHead(200, { 'content-type': 'text/plain' });
      r.end('User-agent: *\nDisallow: /no/\n');
    }), async (o, cache) => {
      const sendBy = Date.now() + 60_000;
      expect((await cache.check(new URL(o.url('/no/a.jpg')), undefined, sendBy)).verdict.kind).toBe('disallowed');
      expect((await cache.check(new URL(o.url('/yes/a.jpg')), undefined, sendBy)).verdict.kind).toBe('allowed');
    });
  });

  it('counts a URL as disallowed, without matching it, when the wildcard rules would take too long to match its path (a hostile file)', async () => {
    // ~500 KiB of rules such as `Disallow: /*a*a*...*z1`: matching one 1,500-character path took 2.2 s.
    const hostile = ['User-agent: *', 'Disallow: /private/'];
    for (let i = 0, size = 0; size < 500 * 1024; i++) {
      const line = `Disallow: /*${'a*'.repeat(20)}z${i}`;
      hostile.push(line);
      size += line.length + 1;
    }
    await withRobots((o) => o.serve('/robots.txt', hostile.join('\n'), 'text/plain'), async (o, cache) => {
      const started = Date.now();
      const long = await cache.check(new URL(o.url(`/${'a'.repeat(1500)}.jpg`)));
      expect(long.verdict).toEqual({ kind: 'disallowed', reason: expect.stringMatching(/^robots.txt has too many wildcard rules \(\d+ characters\) to match a path of 1505 characters against$/) });
      expect(Date.now() - started).toBeLessThan(1_000);
      // A short path is matched as the file says.
      expect((await cache.check(new URL(o.url('/x.jpg')))).verdict.kind).toBe('allowed');
      expect((await cache.check(new URL(o.url('/private/x.jpg')))).verdict.kind).toBe('disallowed');
    });
    // Rules for another crawler cost us nothing.
    const theirs = ['User-agent: OtherBot', ...hostile.slice(2), '', 'User-agent: *', 'Disallow: /private/'];
    await withRobots((o) => o.serve('/robots.txt', theirs.join('\n'), 'text/plain'), async (o, cache) => {
      expect((await cache.check(new URL(o.url(`/${'a'.repeat(1500)}.jpg`)))).verdict.kind).toBe('allowed');
    });
  });

  it('matches a URL against costly wildcard rules once, however often it is checked', async () => {
    // 50 rules of 42 wildcard characters: a 1,000-character path is ~2 million steps, under the
    // bound, and the paced runner checks a URL up to three times before its request.
    const rules = ['User-agent: *', ...Array.from({ length: 50 }, (_, i) => `Disallow: /*${'a*'.repeat(20)}z${i}`)];
    await withRobots((o) => o.serve('/robots.txt', rules.join('\n'), 'text/plain'), async (o, cache) => {
      await cache.check(new URL(o.url('/first.jpg')));
      const matched = jest.spyOn(RobotsPrototype, 'isAllowed');
      try {
        const long = new URL(o.url(`/${'a'.repeat(1000)}.jpg`));
        for (let i = 0; i < 3; i++) expect(cache.cachedVerdict(long)?.kind).toBe('allowed');
        expect(matched).toHaveBeenCalledTimes(1);
        // A cheap check is not remembered: nothing to save, and a crawl checks millions.
        for (let i = 0; i < 2; i++) expect(cache.cachedVerdict(new URL(o.url('/z3/x.jpg')))?.kind).toBe('allowed');
        expect(matched).toHaveBeenCalledTimes(3);
      } finally {
        matched.mockRestore();
      }
    });
  });

  it('reads the Crawl-delay of our group (or of *), at most a minute', async () => {
    const file = 'User-agent: PoliteImageCrawler\nCrawl-delay: 2.5\nDisallow: /no/\n\nUser-agent: *\nCrawl-delay: 30\n';
    await withRobots((o) => o.serve('/robots.txt', file, 'text/plain'), async (o, cache) => {
      const url = new URL(o.url('/a.jpg'));
      expect(cache.crawlDelayMs(url)).toBeUndefined(); // not fetched yet
      await cache.check(url);
      expect(cache.crawlDelayMs(url)).toBe(2_500);
    });
    await withRobots((o) => o.serve('/robots.txt', 'User-agent: *\nCrawl-delay: 86400\n', 'text/plain'), async (o, cache) => {
      const url = new URL(o.url('/a.jpg'));
      await cache.check(url);
      expect(cache.crawlDelayMs(url)).toBe(60_000);
    });
    await withRobots((o) => o.serve('/robots.txt', 'User-agent: *\nCrawl-delay: soon\nDisallow: /x\n', 'text/plain'), async (o, cache) => {
      const url = new URL(o.url('/a.jpg'));
      await cache.check(url);
      expect(cache.crawlDelayMs(url)).toBeUndefined();
    });
  });

  it('treats a 4xx robots.txt as allow-all', async () => {
    await withRobots((o) => o, async (o, cache) => {
      expect((await cache.check(new URL(o.url('/any.jpg')))).verdict.kind).toBe('allowed');
    });
  });

  it('treats a 5xx robots.txt as disallow-for-now', async () => {
    await withRobots((o) => o.route('/robots.txt', (_q, r) => { r.writeHead(503); r.end(); }), async (o, cache) => {
      const { verdict } = await cache.check(new URL(o.url('/any.jpg')));
      expect(verdict).toEqual({ kind: 'unavailable', reason: 'robots.txt answered 503', retryAtMs: expect.any(Number), giveUp: false, tries: 1 });
    });
  });

  it('waits out a longer Retry-After of a 503 or 429 robots.txt before asking again (up to 15 min)', async () => {
    for (const [status, retryAfter, waitMs] of [[503, '600', 600_000], [429, '7200', 900_000], [503, '10', cfg.robotsRetryMs], [500, '600', cfg.robotsRetryMs]] as const) {
      await withRobots((o) => o.route('/robots.txt', (_q, r) => { r.writeHead(status, { 'retry-after': retryAfter }); r.end(); }), async (o, cache) => {
        const before = Date.now();
        const { verdict } = await cache.check(new URL(o.url('/any.jpg')));
        expect(verdict).toMatchObject({ kind: 'unavailable', reason: `robots.txt answered ${status}` });
        const retryAtMs = (verdict as { retryAtMs: number }).retryAtMs;
        expect(retryAtMs - before).toBeGreaterThanOrEqual(waitMs);
        expect(retryAtMs - Date.now()).toBeLessThanOrEqual(waitMs);
      });
    }
  });

  it('measures a robots.txt Retry-After date from the site\'s own Date, its clock an hour behind ours', async () => {
    const behind = (o: Origin) => o.route('/robots.txt', (_q, r) => {
      const siteNow = Math.floor(Date.now() / 1000) * 1000 - 3_600_000;
      r.writeHead(503, { date: new Date(siteNow).toUTCString(), 'retry-after': new Date(siteNow + 600_000).toUTCString() });
      r.end();
    });
    await withRobots(behind, async (o, cache) => {
      const before = Date.now();
      const { verdict } = await cache.check(new URL(o.url('/any.jpg')));
      expect((verdict as { retryAtMs: number }).retryAtMs - before).toBeGreaterThanOrEqual(600_000);
      expect((verdict as { retryAtMs: number }).retryAtMs - Date.now()).toBeLessThanOrEqual(600_000);
    });
  });

  it('asks an unavailable robots.txt again after the retry interval, and gives up after three failures in a row', async () => {
    let now = 1_000_000;
    let answer = 503;
    const o = await new Origin().route('/robots.txt', (_q, r) => { r.writeHead(answer); r.end(answer === 200 ? 'User-agent: *\nDisallow: /no/\n' : ''); }).start();
    try {
      const cache = new RobotsCache(fetcher, cfg, () => now);
      const url = new URL(o.url('/a.jpg'));
      const check = async () => (await cache.check(url)).verdict;
      expect(await check()).toEqual({ kind: 'unavailable', reason: 'robots.txt answered 503', retryAtMs: now + cfg.robotsRetryMs, giveUp: false, tries: 1 });
      now += cfg.robotsRetryMs - 1;
      expect(await check()).toMatchObject({ kind: 'unavailable', giveUp: false, tries: 1 }); // cached: not asked again
      expect(o.hits('/robots.txt')).toHaveLength(1);
      now += 1;
      expect(await check()).toMatchObject({ kind: 'unavailable', giveUp: false, tries: 2 });
      now += cfg.robotsRetryMs;
      expect(await check()).toEqual({ kind: 'unavailable', reason: 'robots.txt answered 503; gave up after 3 tries at least 5 min apart', retryAtMs: now + cfg.robotsRetryMs, giveUp: true, tries: 3 });
      expect(o.hits('/robots.txt')).toHaveLength(3);
      // An answer clears the count: the next failure starts from one again.
      now += cfg.robotsRetryMs;
      answer = 200;
      expect(await check()).toEqual({ kind: 'allowed' });
      now += cfg.robotsTtlMs;
      answer = 500;
      expect(await check()).toMatchObject({ kind: 'unavailable', reason: 'robots.txt answered 500', giveUp: false, tries: 1 });
    } finally {
      await o.stop();
    }
  });

  it('asks a host that DNS says does not exist again after 30 s instead of the full interval, and gives up after as many tries', async () => {
    // The resolver's answers are made here: no test may depend on what the machine's DNS says.
    let code = 'ENOTFOUND';
    const lookup = jest.spyOn(dns, 'lookup').mockImplementation(((host: string, _o: unknown, cb: (e: Error) => void) => {
      cb(Object.assign(new Error(`getaddrinfo ${code} ${host}`), { code, hostname: host }));
    }) as unknown as typeof dns.lookup);
    let now = 1_000_000;
    try {
      const cache = new RobotsCache(fetcher, cfg, () => now);
      const url = new URL('http://images.no-such-host.test/a.jpg');
      const check = async () => (await cache.check(url)).verdict;
      expect(await check()).toEqual({ kind: 'unavailable', reason: 'robots.txt unreachable (getaddrinfo ENOTFOUND images.no-such-host.test)', retryAtMs: now + 30_000, giveUp: false, tries: 1 });
      now += 30_000;
      expect(await check()).toMatchObject({ giveUp: false, tries: 2, retryAtMs: now + 30_000 });
      now += 30_000;
      expect(await check()).toMatchObject({ reason: 'robots.txt unreachable (getaddrinfo ENOTFOUND images.no-such-host.test); gave up after 3 tries at least 30 s apart', giveUp: true, tries: 3 });
      expect(lookup.mock.calls.filter(([h]) => h === 'images.no-such-host.test')).toHaveLength(3);
      // The resolver failing is an outage like any other: the full interval.
      code = 'EAI_AGAIN';
      const other = new URL('http://cdn.no-such-host.test/a.jpg');
      expect((await cache.check(other)).verdict).toMatchObject({ kind: 'unavailable', retryAtMs: now + cfg.robotsRetryMs, tries: 1 });
      // A shorter configured interval is not lengthened.
      code = 'ENOTFOUND';
      const quick = new RobotsCache(fetcher, { ...cfg, robotsRetryMs: 10_000 }, () => now);
      expect((await quick.check(url)).verdict).toMatchObject({ retryAtMs: now + 10_000, tries: 1 });
    } finally {
      lookup.mockRestore();
    }
  });

  it('asks as often and as many times as configured (CRAWL_ROBOTS_RETRY_S, CRAWL_ROBOTS_TRIES)', async () => {
    let now = 1_000_000;
    const o = await new Origin().route('/robots.txt', (_q, r) => { r.writeHead(503); r.end(); }).start();
    try {
      const url = new URL(o.url('/a.jpg'));
      const once = new RobotsCache(fetcher, { ...cfg, robotsRetryMs: 30_000, robotsMaxTries: 1 }, () => now);
      expect((await once.check(url)).verdict).toEqual({ kind: 'unavailable', reason: 'robots.txt answered 503; gave up after 1 try', retryAtMs: now + 30_000, giveUp: true, tries: 1 });
      const twice = new RobotsCache(fetcher, { ...cfg, robotsRetryMs: 30_000, robotsMaxTries: 2 }, () => now);
      expect((await twice.check(url)).verdict).toMatchObject({ giveUp: false, retryAtMs: now + 30_000, tries: 1 });
      now += 30_000;
      expect((await twice.check(url)).verdict).toMatchObject({ reason: 'robots.txt answered 503; gave up after 2 tries at least 30 s apart', giveUp: true, tries: 2 });
      expect(o.hits('/robots.txt')).toHaveLength(3);
    } finally {
      await o.stop();
    }
  });

  it('remembers a bounded number of origins, dropping expired entries first, then the oldest', async () => {
    const origins = await Promise.all([0, 1, 2, 3].map((k) => (k === 1
      ? new Origin().route('/robots.txt', (_q, r) => { r.writeHead(503); r.end(); }) // kept 5 min, not 24 h
      : new Origin().serve('/robots.txt', 'User-agent: *\nDisallow: /no/\n', 'text/plain')).start()));
    try {
      let now = 0;
      const cache = new RobotsCache(fetcher, cfg, () => now, 2);
      const url = (k: number) => new URL(origins[k]!.url('/no/x.jpg'));
      await cache.check(url(0));
      await cache.check(url(1));
      now += cfg.robotsRetryMs; // 1's failure has expired; 0's file has not
      await cache.check(url(2));
      expect([0, 1, 2].map((k) => cache.known(url(k)))).toEqual([true, false, true]);
      await cache.check(url(3)); // nothing expired: the oldest (0) goes
      expect([0, 2, 3].map((k) => cache.known(url(k)))).toEqual([false, true, true]);
      await cache.check(url(0));
      expect(origins.map((o) => o.hits('/robots.txt').length)).toEqual([2, 1, 1, 1]);
    } finally {
      await Promise.all(origins.map((o) => o.stop()));
    }
  });

  it.each([429, 408])('treats a %i robots.txt as disallow-for-now, not as the 4xx that allows all', async (status) => {
    // A 408 says the site gave up waiting for the request, not that it has no rules.
    await withRobots((o) => o.route('/robots.txt', (_q, r) => { r.writeHead(status, { 'retry-after': '60' }); r.end(); }), async (o, cache) => {
      const { verdict } = await cache.check(new URL(o.url('/any.jpg')));
      expect(verdict).toEqual({ kind: 'unavailable', reason: `robots.txt answered ${status}`, retryAtMs: expect.any(Number), giveUp: false, tries: 1 });
    });
  });

  it('parses the first 512 KiB of a larger robots.txt instead of ignoring it', async () => {
    const filler = '# the rules of a large site\n'.repeat(Math.ceil((600 * 1024) / 28));
    const body = `User-agent: *\nDisallow: /private/\n${filler}User-agent: *\nDisallow: /late/\n`;
    await withRobots((o) => o.serve('/robots.txt', body, 'text/plain'), async (o, cache) => {
      expect((await cache.check(new URL(o.url('/private/a.jpg')))).verdict.kind).toBe('disallowed');
      // Past the first 512 KiB: not read.
      expect((await cache.check(new URL(o.url('/late/a.jpg')))).verdict.kind).toBe('allowed');
      expect((await cache.check(new URL(o.url('/public/a.jpg')))).verdict.kind).toBe('allowed');
    });
  });

  it('obeys a robots.txt the server gzip-encoded although we asked for identity', async () => {
    const rules = gzipSync('User-agent: *\nDisallow: /no/\n');
    await withRobots((o) => o.route('/robots.txt', (_q, r) => {
      r.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip', 'content-length': rules.length });
      r.end(rules);
    }), async (o, cache) => {
      expect((await cache.check(new URL(o.url('/no/a.jpg')))).verdict.kind).toBe('disallowed');
      expect((await cache.check(new URL(o.url('/yes/a.jpg')))).verdict.kind).toBe('allowed');
      expect(o.hits('/robots.txt').map((h) => h.acceptEncoding)).toEqual(['identity']);
    });
  });

  it('treats a robots.txt in a coding it cannot read as disallow-for-now, not as no rules', async () => {
    await withRobots((o) => o.route('/robots.txt', (_q, r) => {
      r.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'zstd' });
      r.end(Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3]));
    }), async (o, cache) => {
      const { verdict } = await cache.check(new URL(o.url('/no/a.jpg')));
      expect(verdict).toEqual({ kind: 'unavailable', reason: 'robots.txt unreadable (unsupported content-encoding "zstd")', retryAtMs: expect.any(Number), giveUp: false, tries: 1 });
    });
  });

  it('says a robots.txt whose body never arrived was not received, not what its status was', async () => {
    const slow = pipelineConfigFromEnv({ ...cfg, minBytesPerSecond: 1_000, minRateGraceMs: 1_000 });
    const slowFetcher = new Fetcher(slow);
    try {
      await withRobots((o) => o.route('/robots.txt', drip), async (o) => {
        const { verdict } = await new RobotsCache(slowFetcher, slow).check(new URL(o.url('/any.jpg')));
        // One byte a second against a 1 s stall limit: the rate check or the stall may end it.
        expect(verdict).toMatchObject({ kind: 'unavailable', reason: expect.stringMatching(/^robots\.txt answered 200 but its body did not arrive \((transfer below 1000 bytes\/s|body stalled; \d+ bytes of the body received)\)$/) });
      });
      await withRobots((o) => o.route('/robots.txt', (_q, r) => { r.writeHead(200, { 'content-type': 'text/plain' }); r.write('User-agent: *\n'); }), async (o) => {
        const { verdict } = await new RobotsCache(slowFetcher, slow).check(new URL(o.url('/any.jpg')));
        expect(verdict).toMatchObject({ kind: 'unavailable', reason: 'robots.txt answered 200 but its body did not arrive (body stalled; 14 bytes of the body received)' });
      });
    } finally {
      await slowFetcher.close();
    }
  });

  it('treats an unreachable host as disallow-for-now', async () => {
    const o = await new Origin().start();
    const url = new URL(o.url('/any.jpg'));
    await o.stop();
    const { verdict } = await new RobotsCache(fetcher, cfg).check(url);
    // Node's message names the code already: it is not said twice.
    expect(verdict).toMatchObject({ kind: 'unavailable', reason: `robots.txt unreachable (connect ECONNREFUSED ${url.host})` });
  });

  it('does not send robots.txt past the send-by time of the slot it takes, and asks again later', async () => {
    await withRobots((o) => o.serve('/robots.txt', 'User-agent: *\nDisallow: /no/\n', 'text/plain'), async (o, cache) => {
      const url = new URL(o.url('/no/a.jpg'));
      expect(await cache.check(url, undefined, Date.now() - 1)).toEqual({ verdict: { kind: 'pending' }, fetched: false });
      expect(o.hits('/robots.txt')).toHaveLength(0);
      expect(cache.known(url)).toBe(false);
      expect(await cache.check(url, undefined, Date.now() + 5_000)).toMatchObject({ verdict: { kind: 'disallowed' }, fetched: true });
      expect(o.hits('/robots.txt')).toHaveLength(1);
    });
  });

  it('gives each redirect of robots.txt a request (and a slot) of its own, and applies the file to the origin', async () => {
    const target = await new Origin().serve('/rules.txt', 'User-agent: *\nDisallow: /no/\n', 'text/plain').start();
    try {
      await withRobots((o) => o.route('/robots.txt', redirect('/moved.txt')).route('/moved.txt', redirect(target.url('/rules.txt'))), async (o, cache) => {
        const url = new URL(o.url('/no/a.jpg'));
        // One request per call: the robots.txt, its first redirect, then the file at the other origin.
        expect(await cache.check(url, undefined, Date.now() + 5_000)).toEqual({ verdict: { kind: 'pending' }, fetched: true });
        expect(o.requests.map((r) => r.path)).toEqual(['/robots.txt']);
        expect(cache.pendingHop(url.origin)).toBe(o.url('/moved.txt'));
        expect(await cache.check(url, undefined, Date.now() + 5_000)).toEqual({ verdict: { kind: 'pending' }, fetched: true });
        expect(o.requests.map((r) => r.path)).toEqual(['/robots.txt', '/moved.txt']);
        expect(target.requests).toEqual([]);
        expect(await cache.check(url, undefined, Date.now() + 5_000)).toMatchObject({ verdict: { kind: 'disallowed' }, fetched: true });
        expect(target.requests.map((r) => r.path)).toEqual(['/rules.txt']);
        expect((await cache.check(new URL(o.url('/yes/a.jpg')))).verdict.kind).toBe('allowed');
        expect(cache.pendingHop(url.origin)).toBeUndefined();
      });
    } finally {
      await target.stop();
    }
  });

  it('keeps a robots.txt redirected to another origin\'s robots.txt (a site moved to https) as that origin\'s file too: asked once', async () => {
    const moved = await new Origin().serve('/robots.txt', 'User-agent: *\nDisallow: /no/\nCrawl-delay: 2\n', 'text/plain').start('127.0.0.2');
    const elsewhere = await new Origin().serve('/rules.txt', 'User-agent: *\nDisallow: /\n', 'text/plain').start('127.0.0.3');
    try {
      await withRobots((o) => o.route('/robots.txt', redirect(moved.url('/robots.txt'), 301)), async (o, cache) => {
        const old = new URL(o.url('/no/a.jpg'));
        await cache.check(old, undefined, Date.now() + 5_000);
        expect((await cache.check(old, undefined, Date.now() + 5_000)).verdict.kind).toBe('disallowed');
        // The new origin's URLs are judged by the file already read, with no request of their own.
        expect(cache.known(new URL(moved.url('/yes/a.jpg')))).toBe(true);
        expect(await cache.check(new URL(moved.url('/no/b.jpg')))).toMatchObject({ verdict: { kind: 'disallowed' }, fetched: false });
        expect((await cache.check(new URL(moved.url('/yes/b.jpg')))).verdict.kind).toBe('allowed');
        expect(cache.crawlDelayMs(new URL(moved.url('/yes/b.jpg')))).toBe(2_000);
        expect(moved.requests.map((r) => r.path)).toEqual(['/robots.txt']);
        // A file at another path is the old origin's rules only: the other origin's own robots.txt is still to be read.
        const viaRules = new RobotsCache(fetcher, cfg);
        o.route('/robots.txt', redirect(elsewhere.url('/rules.txt'), 301));
        await viaRules.check(old, undefined, Date.now() + 5_000);
        expect((await viaRules.check(old, undefined, Date.now() + 5_000)).verdict.kind).toBe('disallowed');
        expect(viaRules.known(new URL(elsewhere.url('/a.jpg')))).toBe(false);
      });
    } finally {
      await moved.stop();
      await elsewhere.stop();
    }
  });

  it('passes a cookie wall in front of robots.txt: the cookie its redirect sets goes on the next hop', async () => {
    const wall = (q: http.IncomingMessage, r: http.ServerResponse) => {
      if (q.headers.cookie === 'passed=1') {
        r.writeHead(200, { 'content-type': 'text/plain' });
        r.end('User-agent: *\nDisallow: /no/\n');
        return;
      }
      r.writeHead(302, { location: '/robots.txt', 'set-cookie': 'passed=1; Path=/' });
      r.end();
    };
    await withRobots((o) => o.route('/robots.txt', wall), async (o, cache) => {
      const url = new URL(o.url('/no/a.jpg'));
      expect((await cache.check(url)).verdict.kind).toBe('pending');
      expect((await cache.check(url)).verdict.kind).toBe('disallowed');
      expect(o.hits('/robots.txt')).toHaveLength(2);
    });
  });

  it('treats robots.txt as unavailable after more than five redirects', async () => {
    await withRobots((o) => o.route('/robots.txt', redirect('/robots.txt')), async (o, cache) => {
      const url = new URL(o.url('/a.jpg'));
      for (let i = 0; i < 5; i++) expect((await cache.check(url)).verdict.kind).toBe('pending');
      expect((await cache.check(url)).verdict).toEqual({ kind: 'unavailable', reason: 'robots.txt answered 302', retryAtMs: expect.any(Number), giveUp: false, tries: 1 });
      expect(o.hits('/robots.txt')).toHaveLength(6);
    });
  });
});
