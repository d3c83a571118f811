import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Worker } from '@temporalio/worker';
import { startCrawl } from '../../src/crawl/start';
import { Origin } from '../../src/demo/origin';
import { LocalStore } from '../../src/pipeline/store';
import { connectClient, connectWorker, ensureSearchAttributes } from '../../src/temporal/connect';
import { ensureTemporalServer, freePort, portOpen, type RunningServer } from '../../src/temporal/devServer';
import { createCrawlWorker, defaultDeps } from '../../src/workers/worker';
import { monitorWorkflowId, type MonitorStats } from '../../src/workflows/monitorState';
import { jpeg } from '../support/images';
import { readRecords } from '../support/records';

// Issue 5's durability promise for the embedded default: stop the server in the middle of a
// crawl, start it again on the same SQLite file, and the crawl finishes with nothing lost or
// doubled.
describe('the embedded server (SQLite) stopped and restarted mid-crawl', () => {
  const savedAddress = process.env.TEMPORAL_ADDRESS;
  let origin: Origin;
  beforeAll(async () => {
    delete process.env.TEMPORAL_ADDRESS;
    const body = await jpeg(320, 240);
    origin = await new Origin().route('*', (req, res) => {
      if (req.url === '/robots.txt') { res.writeHead(404); res.end(); return; }
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
      res.end(body);
    }).start('127.0.0.5');
  });
  afterAll(async () => {
    await origin.stop();
    if (savedAddress !== undefined) process.env.TEMPORAL_ADDRESS = savedAddress;
  });

  it('resumes the crawl from the kept file: every URL ends with exactly one record', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'restart-'));
    const serverDir = path.join(dataDir, 'temporal');
    const [port, uiPort] = [await freePort(), await freePort()];
    const source = `127.0.0.5:${origin.port}`;
    const urls = Array.from({ length: 40 }, (_, i) => origin.url(`/r/${i}.jpg`));
    const manifest = path.join(dataDir, 'manifest.txt');
    fs.writeFileSync(manifest, urls.join('\n'));

    const up = async (): Promise<{ server: RunningServer; worker: Worker; running: Promise<void>; close(): Promise<void> }> => {
      // It may move when another process binds a port freePort() found free (see devServer).
      const server = await ensureTemporalServer({ dataDir: serverDir, port, uiPort, ifPortTaken: 'another' });
      expect(server.owned).toBe(true);
      const connection = await connectWorker(server.address);
      const worker = await createCrawlWorker({
        connection, taskQueue: 'restart-test', deps: defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] }),
      });
      const running = worker.run();
      return {
        server, worker, running,
        close: async () => {
          worker.shutdown();
          await running;
          await connection.close();
          await server.stop();
        },
      };
    };

    let first = await up();
    try {
      const client = await connectClient(first.server.address);
      await ensureSearchAttributes(client);
      await startCrawl({ client, store: new LocalStore(path.join(dataDir, 'store')), manifest, catalog: new Map([[source, { rate: 4 }]]), taskQueue: 'restart-test' });
      await client.connection.close();
      const deadline = Date.now() + 60_000;
      while (origin.hits('/r/').length < 8 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(origin.hits('/r/').length).toBeGreaterThanOrEqual(8);
    } finally {
      await first.close();
    }
    expect(await portOpen('127.0.0.1', Number(first.server.address.split(':')[1]))).toBe(false);
    expect(readRecords(dataDir).length).toBeLessThan(40);

    first = await up();
    try {
      const client = await connectClient(first.server.address);
      const stats = (await client.workflow.getHandle(monitorWorkflowId(source)).result()) as MonitorStats;
      await client.connection.close();
      expect(stats.urls).toMatchObject({ total: 40, finished: 40 });
      const all = readRecords(dataDir);
      expect(all).toHaveLength(40);
      expect(new Set(all.map((r) => r.url))).toEqual(new Set(urls));
      expect(all.every((r) => r.outcome === 'done')).toBe(true);
      // Finished work was kept (heartbeats, record files); only a URL whose result had not been
      // saved when the worker stopped may be asked once more.
      const perUrl = new Map<string, number>();
      for (const r of origin.hits('/r/')) perUrl.set(r.path, (perUrl.get(r.path) ?? 0) + 1);
      expect(Math.max(...perUrl.values())).toBeLessThanOrEqual(2);
    } finally {
      await first.close();
    }
  });
});
