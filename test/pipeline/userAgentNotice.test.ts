import { DEFAULT_USER_AGENT, pipelineConfigFromEnv } from '../../src/pipeline/config';
import { Fetcher } from '../../src/pipeline/fetcher';
import { leavesMachine, placeholderUserAgent, UserAgentNotice } from '../../src/pipeline/userAgentNotice';
import { Origin } from '../support/origin';

describe('a User-Agent whose contact reaches no one', () => {
  it('is the built-in one, or one whose every contact is on an example domain', () => {
    expect(placeholderUserAgent(DEFAULT_USER_AGENT)).toBe(true);
    // The compose file's default.
    expect(placeholderUserAgent('PoliteImageCrawler/0.1 (+https://example.org/crawler)')).toBe(true);
    expect(placeholderUserAgent('MuseumBot/2.1 (+https://bot.museum.example/about; ops@museum.test)')).toBe(true);
    expect(placeholderUserAgent('MuseumBot/2.1 (+https://museum.org/bot)')).toBe(false);
    // A real address beside an example page still reaches someone.
    expect(placeholderUserAgent('MuseumBot/2.1 (+https://example.com/bot; crawler@museum.org)')).toBe(false);
    expect(placeholderUserAgent('MuseumBot/2.1 (+https://www.example.com.museum.org/bot)')).toBe(false);
  });

  it('matters only for requests that leave the machine', () => {
    expect(['127.0.0.1', '127.9.9.9', '::1', 'localhost', 'img.localhost'].map(leavesMachine)).toEqual([false, false, false, false, false]);
    expect(['10.0.0.1', '93.184.216.34', '2001:db8::1', 'museum.org'].map(leavesMachine)).toEqual([true, true, true, true]);
  });

  it('is said once, at the first request to a real site, naming the setting to change', () => {
    const said: [object, string][] = [];
    const notice = new UserAgentNotice(DEFAULT_USER_AGENT, (f, m) => said.push([f, m]));
    notice.sending('127.0.0.1');
    expect(said).toHaveLength(0);
    notice.sending('museum.org');
    notice.sending('photos.org');
    expect(said).toHaveLength(1);
    expect(said[0]![0]).toEqual({ event: 'user-agent-placeholder', userAgent: DEFAULT_USER_AGENT, host: 'museum.org' });
    expect(said[0]![1]).toMatch(/set CRAWL_USER_AGENT to your crawler's name/);
    const own: unknown[] = [];
    new UserAgentNotice('MuseumBot/2.1 (+https://museum.org/bot)', (f) => own.push(f)).sending('museum.org');
    expect(own).toHaveLength(0);
  });

  describe('in the fetcher (real undici, origin on 127.0.0.1)', () => {
    const origin = new Origin();
    beforeAll(async () => { origin.serve('/a.jpg', Buffer.from('x')).serve('/b.jpg', Buffer.from('y')); await origin.start(); });
    afterAll(() => origin.stop());

    it('is told of each request before it goes, and of none the guard refuses', async () => {
      const said: object[] = [];
      // Any host counts as a real site here, since the test may reach loopback alone.
      const notice = new UserAgentNotice(DEFAULT_USER_AGENT, (f) => said.push(f), () => true);
      const fetcher = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.1/32'] }), { userAgentNotice: notice });
      try {
        expect(await fetcher.fetch(origin.url('/a.jpg').replace('127.0.0.1', '127.0.0.2'))).toMatchObject({ ok: false, failure: 'refused' });
        expect(said).toHaveLength(0);
        expect(await fetcher.fetch(origin.url('/a.jpg'))).toMatchObject({ ok: true });
        expect(await fetcher.fetch(origin.url('/b.jpg'))).toMatchObject({ ok: true });
        expect(said).toEqual([{ event: 'user-agent-placeholder', userAgent: DEFAULT_USER_AGENT, host: '127.0.0.1' }]);
      } finally {
        await fetcher.close();
      }
    });
  });
});
