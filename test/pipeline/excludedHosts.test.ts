import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { ExcludedHosts, isExclusionReason } from '../../src/pipeline/excludedHosts';
import { Fetcher } from '../../src/pipeline/fetcher';
import { RobotsCache } from '../../src/pipeline/robots';
import { Origin, redirect } from '../support/origin';

describe('hosts excluded by CRAWL_EXCLUDE_HOSTS (site owners who asked not to be crawled)', () => {
  it('excludes a domain with its subdomains, and an address, and nothing else', () => {
    const ex = new ExcludedHosts(['museum.org', ' *.Photos.example. ', '[::1]', '10.0.0.7']);
    expect(ex.reason('museum.org')).toBe('museum.org is excluded by CRAWL_EXCLUDE_HOSTS (museum.org): not asked for');
    expect(ex.reason('img.cdn.Museum.org.')).toBe('img.cdn.museum.org is excluded by CRAWL_EXCLUDE_HOSTS (museum.org): not asked for');
    // `crawl again --failed` knows such records by their reason, and leaves them out.
    expect(isExclusionReason(ex.reason('img.cdn.Museum.org.')!)).toBe(true);
    expect(isExclusionReason('address 10.0.0.1 is private; not allowed (use --allow-network to open it)')).toBe(false);
    expect(ex.reason('photos.example')).toBeDefined();
    expect(ex.reason('[::1]')).toBeDefined();
    expect(ex.reason('10.0.0.7')).toBeDefined();
    for (const other of ['othermuseum.org', 'museum.org.evil.example', 'org', '10.0.0.70', 'example']) expect(ex.reason(other)).toBeUndefined();
    expect(new ExcludedHosts([]).reason('museum.org')).toBeUndefined();
  });

  it('refuses, as the worker starts, an entry that is no host, naming it', () => {
    const saved = process.env.CRAWL_EXCLUDE_HOSTS;
    process.env.CRAWL_EXCLUDE_HOSTS = 'museum.org, https://photos.example/';
    try {
      expect(() => pipelineConfigFromEnv()).toThrow('CRAWL_EXCLUDE_HOSTS entry "https://photos.example/" is not a host name or IP address (give museum.org: it and its subdomains are excluded)');
      process.env.CRAWL_EXCLUDE_HOSTS = 'museum.org photos.example';
      expect(pipelineConfigFromEnv().excludeHosts).toEqual(['museum.org', 'photos.example']);
    } finally {
      if (saved === undefined) delete process.env.CRAWL_EXCLUDE_HOSTS; else process.env.CRAWL_EXCLUDE_HOSTS = saved;
    }
  });

  describe('in the fetcher and robots.txt (real undici, origins on 127.0.0.1 and 127.0.0.2)', () => {
    const open = new Origin();
    const shut = new Origin();
    let fetcher: Fetcher;
    beforeAll(async () => {
      await shut.serve('/a.jpg', Buffer.from('x')).serve('/robots.txt', 'User-agent: *\nAllow: /\n', 'text/plain').start('127.0.0.2');
      await open.route('/moved.jpg', redirect(shut.url('/a.jpg'))).serve('/b.jpg', Buffer.from('y')).start('127.0.0.1');
      fetcher = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'], excludeHosts: ['127.0.0.2'] }));
    });
    afterAll(async () => { await fetcher.close(); await open.stop(); await shut.stop(); });

    it('asks an excluded site for nothing, not robots.txt, not through a redirect, and opens no connection to it', async () => {
      fetcher.preconnect(shut.url('/a.jpg'));
      expect(await fetcher.fetch(shut.url('/a.jpg'))).toMatchObject({ ok: false, failure: 'refused', reason: '127.0.0.2 is excluded by CRAWL_EXCLUDE_HOSTS (127.0.0.2): not asked for', sent: false });
      expect(await fetcher.fetch(open.url('/moved.jpg'))).toMatchObject({ ok: false, failure: 'refused', reason: expect.stringContaining('excluded by CRAWL_EXCLUDE_HOSTS') });
      const robots = new RobotsCache(fetcher, pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'], excludeHosts: ['127.0.0.2'] }));
      expect((await robots.check(new URL(shut.url('/a.jpg')))).verdict).toEqual({ kind: 'refused', reason: '127.0.0.2 is excluded by CRAWL_EXCLUDE_HOSTS (127.0.0.2): not asked for' });
      expect(await fetcher.fetch(open.url('/b.jpg'))).toMatchObject({ ok: true });
      await new Promise((r) => setTimeout(r, 200));
      expect(shut.requests).toEqual([]);
      expect(shut.connections).toBe(0);
      expect(open.hits('/moved.jpg')).toHaveLength(1);
    });
  });
});
