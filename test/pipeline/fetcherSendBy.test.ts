import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { Fetcher } from '../../src/pipeline/fetcher';
import { Origin } from '../support/origin';

// A paced request that cannot be on the wire by its send-by time must not be sent at all:
// going out late would crowd the next request at the site.
describe('Fetcher send-by deadline (real undici, origin on 127.0.0.1)', () => {
  const origin = new Origin();
  let fetcher: Fetcher;

  beforeAll(async () => {
    origin.serve('/a.jpg', Buffer.from('x')).serve('/b.jpg', Buffer.from('y')).serve('/c.jpg', Buffer.from('z')).serve('/d.jpg', Buffer.from('w'));
    await origin.start();
    fetcher = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }));
  });
  afterAll(async () => { await fetcher.close(); await origin.stop(); });

  it('does not write a request whose send-by time has passed, and says so', async () => {
    const res = await fetcher.fetch(origin.url('/a.jpg'), { sendBy: Date.now() - 1 });
    expect(res).toMatchObject({ ok: false, failure: 'late', sent: false });
    await new Promise((r) => setTimeout(r, 100));
    expect(origin.hits('/a.jpg')).toHaveLength(0);
  });

  it('sends a request that is in time, and the next one after a refusal', async () => {
    const late = await fetcher.fetch(origin.url('/b.jpg'), { sendBy: Date.now() - 1 });
    expect(late.failure).toBe('late');
    const res = await fetcher.fetch(origin.url('/b.jpg'), { sendBy: Date.now() + 5_000 });
    expect(res).toMatchObject({ ok: true, status: 200, sent: true });
    expect(origin.hits('/b.jpg')).toHaveLength(1);
  });

  it('sends a late request only when its pacer lets it go late, asking at the moment it would leave', async () => {
    const asked: number[] = [];
    const refused = await fetcher.fetch(origin.url('/d.jpg'), { sendBy: Date.now() - 1, mayGoLate: () => { asked.push(Date.now()); return false; } });
    expect(refused).toMatchObject({ ok: false, failure: 'late', sent: false });
    const before = Date.now();
    const res = await fetcher.fetch(origin.url('/d.jpg'), { sendBy: Date.now() - 1, mayGoLate: () => { asked.push(Date.now()); return true; } });
    expect(res).toMatchObject({ ok: true, status: 200, sent: true });
    expect(origin.hits('/d.jpg')).toHaveLength(1);
    expect(asked).toHaveLength(2);
    expect(asked[1]!).toBeGreaterThanOrEqual(before);
  });

  it('keeps the keep-alive connection when it refuses a late request', async () => {
    // Under load, a refusal that closed the connection made the next request reconnect and miss
    // its slot too.
    expect((await fetcher.fetch(origin.url('/c.jpg'))).ok).toBe(true);
    const before = origin.connections;
    expect((await fetcher.fetch(origin.url('/c.jpg'), { sendBy: Date.now() - 1 })).failure).toBe('late');
    expect((await fetcher.fetch(origin.url('/c.jpg'), { sendBy: Date.now() + 5_000 })).ok).toBe(true);
    expect(origin.connections).toBe(before);
    expect(origin.hits('/c.jpg')).toHaveLength(2);
  });
});
