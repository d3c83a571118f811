import { commandGuard, pipelineConfigFromEnv } from './config';
import { storeFromEnv } from './store';

describe('pipeline configuration from the environment', () => {
  const saved = { ...process.env };
  afterEach(() => { process.env = { ...saved }; });

  function withEnv(vars: Record<string, string>): () => unknown {
    return () => {
      process.env = { ...saved, ...vars };
      return pipelineConfigFromEnv();
    };
  }

  it('names CRAWL_ALLOW_NETWORKS when the bad allow-network entry is in it, not in the command line', () => {
    process.env = { ...saved, CRAWL_ALLOW_NETWORKS: '127.0.0.0/8, 10.0.0.0/33' };
    expect(() => commandGuard(['192.168.0.0/16'])).toThrow('CRAWL_ALLOW_NETWORKS (comma-separated): allow-network entry "10.0.0.0/33" is not a valid CIDR range');
    process.env = { ...saved, CRAWL_ALLOW_NETWORKS: '127.0.0.0/8' };
    expect(() => commandGuard(['10.0.0.0/33'])).toThrow(/^allow-network entry "10.0.0.0\/33" is not a valid CIDR range$/);
    expect(commandGuard(['10.1.0.0/16']).refusal('10.1.2.3')).toBeUndefined();
    expect(commandGuard([]).refusal('127.0.0.9')).toBeUndefined();
  });

  it('takes the defaults, and a User-Agent that names the crawler and a contact URL', () => {
    const cfg = withEnv({ CRAWL_USER_AGENT: 'MuseumBot/2.1 (+https://museum.example/bot)' })() as ReturnType<typeof pipelineConfigFromEnv>;
    expect(cfg.userAgent).toBe('MuseumBot/2.1 (+https://museum.example/bot)');
    expect(cfg.robotsAgent).toBe('MuseumBot');
    expect(cfg.thumbnailQuality).toBe(80);
    expect(cfg.maxBodyBytes).toBe(50 * 1024 * 1024);
  });

  it('matches robots.txt against the crawler a browser-styled User-Agent names after "compatible;", and refuses one that names none', () => {
    const agent = (ua: string) => (withEnv({ CRAWL_USER_AGENT: ua })() as ReturnType<typeof pipelineConfigFromEnv>).robotsAgent;
    expect(agent('Mozilla/5.0 (compatible; MuseumBot/2.1; +https://museum.example/bot)')).toBe('MuseumBot');
    // bingbot's form: the comment after a browser's tokens.
    expect(agent('Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; MuseumBot/2.0; +https://museum.example/bot) Chrome/116.0 Safari/537.36')).toBe('MuseumBot');
    expect(agent('MuseumBot/2.1 (+https://museum.example/bot; compatible; Other/1.0)')).toBe('MuseumBot');
    expect(withEnv({ CRAWL_USER_AGENT: 'Mozilla/5.0 (X11; Linux x86_64; +https://museum.example/bot)' }))
      .toThrow(/CRAWL_USER_AGENT starting with Mozilla\/ must name the crawler after "compatible;" in its comment/);
  });

  it('reads sites\' TDMRep files only when asked, and says which words it takes', () => {
    const on = (v: string) => (withEnv({ CRAWL_READ_TDMREP: v })() as ReturnType<typeof pipelineConfigFromEnv>).readTdmRep;
    expect(on('')).toBe(false);
    expect(on('true')).toBe(true);
    expect(on(' Yes ')).toBe(true);
    expect(on('0')).toBe(false);
    expect(withEnv({ CRAWL_READ_TDMREP: 'maybe' })).toThrow(/CRAWL_READ_TDMREP must be true, false, 1, 0, yes or no, got "maybe"/);
  });

  it('hashes thumbnails and keeps originals only when asked (each costs: CPU, bytes)', () => {
    const cfg = (vars: Record<string, string>) => withEnv(vars)() as ReturnType<typeof pipelineConfigFromEnv>;
    expect(cfg({})).toMatchObject({ perceptualHash: false, keepOriginals: false });
    expect(cfg({ CRAWL_PERCEPTUAL_HASH: 'true', CRAWL_KEEP_ORIGINALS: '1' })).toMatchObject({ perceptualHash: true, keepOriginals: true });
    expect(withEnv({ CRAWL_PERCEPTUAL_HASH: 'dhash' })).toThrow(/CRAWL_PERCEPTUAL_HASH must be true, false, 1, 0, yes or no, got "dhash"/);
  });

  it('makes JPEG thumbnails of 640 px unless told another size or WebP', () => {
    const cfg = (vars: Record<string, string>) => withEnv(vars)() as ReturnType<typeof pipelineConfigFromEnv>;
    expect([cfg({}).thumbnailFormat, cfg({}).thumbnailMaxSide]).toEqual(['jpeg', 640]);
    expect([cfg({ CRAWL_THUMBNAIL_FORMAT: ' WebP ', CRAWL_THUMBNAIL_MAX_SIDE: '256' }).thumbnailFormat, cfg({ CRAWL_THUMBNAIL_MAX_SIDE: '256' }).thumbnailMaxSide]).toEqual(['webp', 256]);
    expect(cfg({ CRAWL_THUMBNAIL_FORMAT: 'jpg' }).thumbnailFormat).toBe('jpeg');
    expect(withEnv({ CRAWL_THUMBNAIL_FORMAT: 'gif' })).toThrow(/CRAWL_THUMBNAIL_FORMAT must be jpeg or webp, got "gif"/);
    expect(withEnv({ CRAWL_THUMBNAIL_MAX_SIDE: '8' })).toThrow(/CRAWL_THUMBNAIL_MAX_SIDE must be an integer from 16 to 4096, got "8"/);
  });

  it('refuses a User-Agent that would not identify us, or would fail every request', () => {
    expect(withEnv({ CRAWL_USER_AGENT: 'Bot/1.0 (+https://x.example)\u00e9' })).toThrow(/printable ASCII/);
    expect(withEnv({ CRAWL_USER_AGENT: 'Bot/1.0 (+https://x.example)\r\nX-Injected: 1' })).toThrow(/printable ASCII on one line/);
    expect(withEnv({ CRAWL_USER_AGENT: 'just a crawler https://x.example' })).toThrow(/product token/);
    expect(withEnv({ CRAWL_USER_AGENT: 'Bot/1.0 (no contact)' })).toThrow(/contact URL/);
  });

  it('takes an empty setting as unset, as a compose file passes an unset variable on', () => {
    const cfg = withEnv({ CRAWL_USER_AGENT: '', CRAWL_THUMBNAIL_QUALITY: '' })() as ReturnType<typeof pipelineConfigFromEnv>;
    expect(cfg.userAgent).toMatch(/^PoliteImageCrawler\/.*https:\/\//);
    expect(cfg.thumbnailQuality).toBe(80);
    // An empty store directory used to mean the current directory.
    process.env = { ...saved, CRAWL_STORE: '', CRAWL_LOCAL_STORE_DIR: ' ' };
    expect(storeFromEnv('/srv/crawl').description).toBe('local directory /srv/crawl/store');
  });

  it('refuses settings that would refuse every image or fetch nothing', () => {
    expect(withEnv({ CRAWL_THUMBNAIL_QUALITY: '150' })).toThrow(/CRAWL_THUMBNAIL_QUALITY must be an integer from 1 to 100, got "150"/);
    expect(withEnv({ CRAWL_MAX_BACKLOG: '0' })).toThrow(/CRAWL_MAX_BACKLOG must be a number of at least 1/);
    expect(withEnv({ CRAWL_TOTAL_TIMEOUT_MS: '0' })).toThrow(/CRAWL_TOTAL_TIMEOUT_MS/);
    expect(withEnv({ CRAWL_MAX_BODY_BYTES: 'lots' })).toThrow(/CRAWL_MAX_BODY_BYTES must be a number/);
    // Past 2^31-1 ms Node runs a timer after 1 ms: every request would time out at once.
    expect(withEnv({ CRAWL_TOTAL_TIMEOUT_MS: '3000000000' })).toThrow(/CRAWL_TOTAL_TIMEOUT_MS must be a number from 1 to 3600000, got "3000000000"/);
    expect(withEnv({ CRAWL_MIN_RATE_GRACE_MS: '1e10' })).toThrow(/CRAWL_MIN_RATE_GRACE_MS must be a number from 0 to 3600000/);
    expect(withEnv({ CRAWL_MAX_BODY_BYTES: '1e99' })).toThrow(/CRAWL_MAX_BODY_BYTES must be a number from 1 to/);
    // sharp refuses a pixel limit that is not a whole number, which failed every image as undecodable.
    expect(withEnv({ CRAWL_MAX_PIXELS: '1.5' })).toThrow(/CRAWL_MAX_PIXELS must be an integer from 1 to/);
    expect(withEnv({ CRAWL_MAX_PIXELS: '1e99' })).toThrow(/CRAWL_MAX_PIXELS must be an integer/);
    const edge = withEnv({ CRAWL_TOTAL_TIMEOUT_MS: '3600000', CRAWL_MAX_PIXELS: '1e12' })() as ReturnType<typeof pipelineConfigFromEnv>;
    expect([edge.totalTimeoutMs, edge.maxPixels]).toEqual([3_600_000, 1e12]);
    // 0 is a real choice here: no minimum transfer rate.
    expect((withEnv({ CRAWL_MIN_BYTES_PER_SECOND: '0' })() as ReturnType<typeof pipelineConfigFromEnv>).minBytesPerSecond).toBe(0);
  });

  it('takes how often and how many times an unreadable robots.txt is asked, within polite bounds', () => {
    const dflt = withEnv({})() as ReturnType<typeof pipelineConfigFromEnv>;
    expect([dflt.robotsRetryMs, dflt.robotsMaxTries]).toEqual([300_000, 3]);
    const quick = withEnv({ CRAWL_ROBOTS_RETRY_S: '30', CRAWL_ROBOTS_TRIES: '1' })() as ReturnType<typeof pipelineConfigFromEnv>;
    expect([quick.robotsRetryMs, quick.robotsMaxTries]).toEqual([30_000, 1]);
    expect(withEnv({ CRAWL_ROBOTS_RETRY_S: '1' })).toThrow(/CRAWL_ROBOTS_RETRY_S must be a number from 10 to 3600, got "1"/);
    expect(withEnv({ CRAWL_ROBOTS_TRIES: '0' })).toThrow(/CRAWL_ROBOTS_TRIES must be an integer from 1 to 20/);
    expect(withEnv({ CRAWL_ROBOTS_TRIES: '2.5' })).toThrow(/CRAWL_ROBOTS_TRIES must be an integer/);
  });
});
