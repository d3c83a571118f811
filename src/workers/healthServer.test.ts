import net from 'node:net';
import { healthAnswer, serveHealth, type HealthFacts } from './healthServer';

describe('a worker\'s health checks', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');
  const facts = (over: Partial<HealthFacts> = {}): HealthFacts => ({ worker: 'RUNNING', taskQueue: 'image-crawler', startedMs: now - 90_000, ...over });

  it('is alive and ready while the worker runs and reaches its server', () => {
    for (const path of ['/healthz', '/readyz', '/readyz?verbose=1']) {
      expect(healthAnswer(path, facts(), now)).toEqual({
        status: 200, body: { status: 'ok', worker: 'RUNNING', taskQueue: 'image-crawler', upS: 90, temporalServer: { reachable: true } },
      });
    }
  });

  it('is not ready, but alive, while it starts, drains or cannot reach its server, saying why', () => {
    const away = facts({ serverOutage: { sinceMs: now - 42_000, error: 'Unavailable: tcp connect error (Connection refused)' } });
    expect(healthAnswer('/healthz', away, now).status).toBe(200);
    expect(healthAnswer('/readyz', away, now)).toMatchObject({
      status: 503,
      body: {
        status: 'unavailable', temporalServer: { reachable: false, since: '2026-12-01T11:59:18.000Z' },
        reasons: ['cannot reach the Temporal server for 42 s (Unavailable: tcp connect error (Connection refused)); the worker keeps trying'],
      },
    });
    expect(healthAnswer('/readyz', facts({ worker: 'STARTING' }), now).body.reasons).toEqual(['the worker is starting']);
    expect(healthAnswer('/readyz', facts({ worker: 'DRAINING' }), now).body.reasons).toEqual(['the worker is stopping (draining)']);
    expect(healthAnswer('/healthz', facts({ worker: 'DRAINING' }), now).status).toBe(200);
    // A failed worker is neither.
    expect(healthAnswer('/healthz', facts({ worker: 'FAILED' }), now).status).toBe(503);
    expect(healthAnswer('/metrics', facts(), now).status).toBe(404);
  });

  it('answers over HTTP, and says which setting when its address is taken', async () => {
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as net.AddressInfo).port;
    await expect(serveHealth({ text: `127.0.0.1:${port}`, host: '127.0.0.1', port }, () => facts())).rejects.toThrow(
      new RegExp(`^cannot serve health checks on 127\\.0\\.0\\.1:${port} \\(CRAWL_HEALTH_ADDRESS\\): listen EADDRINUSE`));
    await new Promise<void>((r) => taken.close(() => r()));

    let state: HealthFacts = facts({ worker: 'STARTING' });
    const served = await serveHealth({ text: `127.0.0.1:${port}`, host: '127.0.0.1', port }, () => state);
    try {
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.headers.get('content-type')).toBe('application/json');
      expect(await ready.json()).toMatchObject({ status: 'unavailable', worker: 'STARTING' });
      state = facts();
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
      const head = await fetch(`http://127.0.0.1:${port}/healthz`, { method: 'HEAD' });
      expect([head.status, await head.text()]).toEqual([200, '']);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`, { method: 'POST' })).status).toBe(405);
    } finally {
      await served.close();
    }
  });
});
