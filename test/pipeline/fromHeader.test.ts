import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { Fetcher } from '../../src/pipeline/fetcher';
import { RobotsCache } from '../../src/pipeline/robots';
import { imageOrigin } from '../support/origin';

/** The pipeline settings with CRAWL_FROM set to `from` (unset when undefined) while they are read. */
function configWithFrom(from: string | undefined) {
  const saved = process.env.CRAWL_FROM;
  if (from === undefined) delete process.env.CRAWL_FROM; else process.env.CRAWL_FROM = from;
  try {
    return pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] });
  } finally {
    if (saved === undefined) delete process.env.CRAWL_FROM; else process.env.CRAWL_FROM = saved;
  }
}

describe('CRAWL_FROM: whom a site owner writes to, sent as From (RFC 9110) on every request', () => {
  it('goes with robots.txt and the image, and no From goes without it', async () => {
    const origin = await imageOrigin();
    try {
      for (const [from, sent] of [[' crawler-ops@museum-crawl.org ', 'crawler-ops@museum-crawl.org'], [undefined, undefined]] as const) {
        const cfg = configWithFrom(from);
        const fetcher = new Fetcher(cfg);
        try {
          const before = origin.requests.length;
          await new RobotsCache(fetcher, cfg).check(new URL(origin.url('/a.jpg')));
          expect((await fetcher.fetch(origin.url('/a.jpg'))).status).toBe(200);
          const asked = origin.requests.slice(before);
          expect(asked.map((r) => [r.path, r.from])).toEqual([['/robots.txt', sent], ['/a.jpg', sent]]);
        } finally {
          await fetcher.close();
        }
      }
    } finally {
      await origin.stop();
    }
  });

  it('refuses at start what is no e-mail address, saying what it wants', () => {
    for (const bad of ['ops', 'Ops <ops@museum.org>', 'mailto:ops@museum.org', 'ops@museum', 'ops@museum.org\r\nX-Evil: 1', 'https://museum.org/contact', 'o..ps@museum.org']) {
      expect(() => configWithFrom(bad)).toThrow(/^CRAWL_FROM must be the e-mail address of whoever runs the crawl, alone .*like crawler-ops@yourdomain\.org; got /);
    }
    expect(configWithFrom('')).not.toHaveProperty('from');
  });
});
