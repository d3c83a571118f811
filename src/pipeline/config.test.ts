import { pipelineConfigFromEnv } from './config';

describe('pipeline configuration from the environment', () => {
  const saved = { ...process.env };
  afterEach(() => { process.env = { ...saved }; });

  function withEnv(vars: Record<string, string>): () => unknown {
    return () => {
      process.env = { ...saved, ...vars };
      return pipelineConfigFromEnv();
    };
  }

  it('takes the defaults, and a User-Agent that names the crawler and a contact URL', () => {
    const cfg = withEnv({ CRAWL_USER_AGENT: 'MuseumBot/2.1 (+https://museum.example/bot)' })() as ReturnType<typeof pipelineConfigFromEnv>;
    expect(cfg.userAgent).toBe('MuseumBot/2.1 (+https://museum.example/bot)');
    expect(cfg.robotsAgent).toBe('MuseumBot');
    expect(cfg.thumbnailQuality).toBe(80);
    expect(cfg.maxBodyBytes).toBe(50 * 1024 * 1024);
  });

  it('refuses a User-Agent that would not identify us, or would fail every request', () => {
    expect(withEnv({ CRAWL_USER_AGENT: '' })).toThrow(/printable ASCII/);
    expect(withEnv({ CRAWL_USER_AGENT: 'Bot/1.0 (+https://x.example)\r\nX-Injected: 1' })).toThrow(/printable ASCII on one line/);
    expect(withEnv({ CRAWL_USER_AGENT: 'just a crawler https://x.example' })).toThrow(/product token/);
    expect(withEnv({ CRAWL_USER_AGENT: 'Bot/1.0 (no contact)' })).toThrow(/contact URL/);
  });

  it('refuses settings that would refuse every image or fetch nothing', () => {
    expect(withEnv({ CRAWL_THUMBNAIL_QUALITY: '150' })).toThrow(/CRAWL_THUMBNAIL_QUALITY must be an integer from 1 to 100, got "150"/);
    expect(withEnv({ CRAWL_MAX_BACKLOG: '0' })).toThrow(/CRAWL_MAX_BACKLOG must be a number of at least 1/);
    expect(withEnv({ CRAWL_TOTAL_TIMEOUT_MS: '0' })).toThrow(/CRAWL_TOTAL_TIMEOUT_MS/);
    expect(withEnv({ CRAWL_MAX_BODY_BYTES: 'lots' })).toThrow(/CRAWL_MAX_BODY_BYTES must be a number/);
    // 0 is a real choice here: no minimum transfer rate.
    expect((withEnv({ CRAWL_MIN_BYTES_PER_SECOND: '0' })() as ReturnType<typeof pipelineConfigFromEnv>).minBytesPerSecond).toBe(0);
  });
});
