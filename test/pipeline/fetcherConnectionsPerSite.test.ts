import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { Fetcher } from '../../src/pipeline/fetcher';
import { Origin } from '../support/origin';

// A site that takes its time to answer holds one of our connections per request. The worker
// keeps to CRAWL_MAX_CONNECTIONS_PER_SITE at once, and says when a paced request had to wait for
// one: the monitor then tells the site's slowness from a worker falling behind.
describe('Fetcher connections per site (real undici, origin on 127.0.0.1)', () => {
  let open = 0;
  let mostOpen = 0;
  const origin = new Origin().route('*', (req, res) => {
    open += 1;
    mostOpen = Math.max(mostOpen, open);
    const answer = () => { open -= 1; res.writeHead(200, { 'content-type': 'image/jpeg' }); res.end('x'); };
    if (req.url?.startsWith('/slow')) setTimeout(answer, 600);
    else answer();
  });
  let fetcher: Fetcher;

  beforeAll(async () => {
    await origin.start();
    fetcher = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'], maxConnectionsPerSite: 2 }));
  });
  afterAll(async () => { await fetcher.close(); await origin.stop(); });

  it('has a paced request wait for a connection when the site holds all of them, and says so', async () => {
    const waits: number[] = [];
    const paced = (path: string, sendByMs: number) => fetcher.fetch(origin.url(path), { sendBy: Date.now() + sendByMs, onConnectionWait: (perSite) => waits.push(perSite) });
    const first = paced('/slow/1.jpg', 5_000);
    const second = paced('/slow/2.jpg', 5_000);
    await new Promise((r) => setTimeout(r, 100));
    // Both connections carry a request: the third waits for one and leaves when the first is answered.
    const third = paced('/slow/3.jpg', 5_000);
    // One whose send-by time passes while it waits is not sent at all.
    const fourth = paced('/slow/4.jpg', 200);
    const results = await Promise.all([first, second, third, fourth]);
    expect(results.map((r) => r.ok)).toEqual([true, true, true, false]);
    expect(results[3]).toMatchObject({ failure: 'late', sent: false });
    expect(mostOpen).toBe(2);
    expect(waits).toEqual([2, 2]);
    expect(origin.hits('/slow/4.jpg')).toHaveLength(0);
  });

  it('says nothing of a request that found a free connection', async () => {
    const waits: number[] = [];
    for (let i = 0; i < 4; i += 1) {
      const res = await fetcher.fetch(origin.url(`/fast/${i}.jpg`), { sendBy: Date.now() + 5_000, onConnectionWait: (perSite) => waits.push(perSite) });
      expect(res.ok).toBe(true);
    }
    expect(waits).toEqual([]);
  });
});

describe('CRAWL_MAX_CONNECTIONS_PER_SITE', () => {
  const saved = process.env.CRAWL_MAX_CONNECTIONS_PER_SITE;
  afterEach(() => {
    if (saved === undefined) delete process.env.CRAWL_MAX_CONNECTIONS_PER_SITE;
    else process.env.CRAWL_MAX_CONNECTIONS_PER_SITE = saved;
  });

  it('is 64 unless set, and a whole number from 1 up', () => {
    delete process.env.CRAWL_MAX_CONNECTIONS_PER_SITE;
    expect(pipelineConfigFromEnv().maxConnectionsPerSite).toBe(64);
    process.env.CRAWL_MAX_CONNECTIONS_PER_SITE = '8';
    expect(pipelineConfigFromEnv().maxConnectionsPerSite).toBe(8);
    for (const bad of ['0', '2.5', 'many']) {
      process.env.CRAWL_MAX_CONNECTIONS_PER_SITE = bad;
      expect(() => pipelineConfigFromEnv()).toThrow(/CRAWL_MAX_CONNECTIONS_PER_SITE must be an integer from 1 to 4096/);
    }
  });
});
