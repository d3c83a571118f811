import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startCrawl } from '../../src/crawl/start';
import { listMonitors, sourceStatus, type SourceStatus } from '../../src/crawl/status';
import { LocalStore } from '../../src/pipeline/store';
import { createCrawlWorker, defaultDeps } from '../../src/workers/worker';
import { SMALL_SOURCE_URLS } from '../../src/workflows/monitor';
import { statsQuery, stopUpdate } from '../../src/workflows/messages';
import { monitorWorkflowId } from '../../src/workflows/monitorState';
import type { MonitorStats } from '../../src/workflows/monitorStats';
import { createLocalEnv } from '../support/temporal';
import { imageOrigin, type Origin } from '../support/origin';

/**
 * A monitor counts a grant's outcomes when the grant ends: a source of 20 URLs at 1/s (one
 * grant) showed 0 finished for 20 s, then 20. The status counts what the running fetch
 * activities' heartbeats say they finished.
 */
describe('crawl status while a grant is out (local dev server, real worker, loopback origin)', () => {
  let env: TestWorkflowEnvironment;
  let origin: Origin;
  beforeAll(async () => {
    env = await createLocalEnv();
    origin = await imageOrigin('127.0.0.1');
  });
  afterAll(async () => {
    await origin?.stop();
    await env?.teardown();
  });

  it('counts the URLs a running fetch activity finished before its grant reports them, for a small source and a batched one', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'unreported-'));
    const small = 'unreported-small';
    const batched = 'unreported-batched';
    const totals = new Map([[small, 20], [batched, 90]]);
    expect(totals.get(small)! <= SMALL_SOURCE_URLS && totals.get(batched)! > SMALL_SOURCE_URLS).toBe(true);
    const manifest = path.join(dataDir, 'm.ndjson');
    fs.writeFileSync(manifest, [...totals].flatMap(([source, n]) => Array.from({ length: n }, (_, i) => JSON.stringify({ url: origin.url(`/${source}/${i}.jpg`), source }))).join('\n'));
    const catalog = new Map([[small, { rate: 1 }], [batched, { rate: 2 }]]);
    const taskQueue = 'unreported';
    const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps: defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] }) });
    const handle = (s: string) => env.client.workflow.getHandle(monitorWorkflowId(s));
    await worker.runUntil(async () => {
      await startCrawl({ client: env.client, store: new LocalStore(path.join(dataDir, 'store')), manifest, catalog, taskQueue });
      // Per source: the most a status counted beyond what the monitor itself had, read first.
      const ahead = new Map<string, number>();
      const seen: SourceStatus[] = [];
      const deadline = Date.now() + 45_000;
      let round = 0;
      while (Date.now() < deadline && [...totals.keys()].some((s) => (ahead.get(s) ?? 0) === 0)) {
        round += 1;
        // Both ways a status is made: described (crawl run's polls), and from a listing (a one-shot crawl status).
        const listed = round % 2 === 0 ? await listMonitors(env.client, { running: true }) : undefined;
        for (const source of totals.keys()) {
          const own = (await handle(source).query(statsQuery)) as MonitorStats;
          const status = await sourceStatus(env.client, source, { listed: listed?.get(source) });
          if (status.workflowStatus !== 'RUNNING' || !status.stats) continue;
          seen.push(status);
          const more = status.stats.urls.finished - own.urls.finished;
          if (status.unreported !== undefined && more > 0) ahead.set(source, Math.max(ahead.get(source) ?? 0, more));
        }
        await new Promise((r) => setTimeout(r, 500));
      }
      expect(ahead.get(small)).toBeGreaterThan(0);
      expect(ahead.get(batched)).toBeGreaterThan(0);
      for (const s of seen) {
        expect(s.stats!.urls.finished).toBeLessThanOrEqual(totals.get(s.source)!);
        // Every URL of this origin is an image: the counts move together.
        expect(s.stats!.counts.done).toBe(s.stats!.urls.finished);
      }
      // Reported, they are counted once: the small source ends with its 20, not more.
      const smallEnd = (await handle(small).result()) as MonitorStats;
      expect(smallEnd.counts.done).toBe(20);
      expect(await handle(batched).executeUpdate(stopUpdate)).toBe('stopped');
      await handle(batched).result();
    });
  }, 120_000);
});
