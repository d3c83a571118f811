import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NativeConnection, type ActivityInboundCallsInterceptor, type ActivityInterceptorsFactory } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { StoreRecorder } from '../../src/activities/storeRecorder';
import { startCrawl } from '../../src/crawl/start';
import type { Origin } from '../../src/demo/origin';
import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { ImagePipeline } from '../../src/pipeline/imagePipeline';
import { Spool } from '../../src/pipeline/spool';
import { LocalStore } from '../../src/pipeline/store';
import type { Connector } from '../../src/pipeline/warmConnections';
import { WorkerOutageWatch } from '../../src/pipeline/workerOutage';
import { createCrawlWorker, defaultDeps } from '../../src/workers/worker';
import { monitorWorkflowId } from '../../src/workflows/monitorState';
import type { MonitorStats } from '../../src/workflows/monitorStats';
import { imageOrigin } from '../support/origin';
import { readRecords } from '../support/records';
import { createLocalEnv } from '../support/temporal';

/**
 * Two workers on one task queue, one of which loses its network (every connect fails with
 * ENETUNREACH, as Node's net says when no route leads out). Before, it went on taking its share
 * of the grants and their slots passed unsent; now it takes one fetch at a time while its network
 * is down, and the other worker crawls the rest.
 */
describe('a worker whose own network is down, beside one whose network works (local dev server)', () => {
  let env: TestWorkflowEnvironment;
  const hosts = ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6'];
  const origins: Origin[] = [];
  beforeAll(async () => {
    env = await createLocalEnv();
    const first = await imageOrigin(hosts[0]);
    origins.push(first);
    for (const h of hosts.slice(1)) origins.push(await imageOrigin(h, first.port));
  });
  afterAll(async () => {
    await Promise.all(origins.map((o) => o.stop()));
    await env?.teardown();
  });

  it('takes one fetch at a time while it is down, and the crawl finishes on the other worker', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'net-down-'));
    const perSource = 100;
    const manifest = path.join(dataDir, 'manifest.txt');
    fs.writeFileSync(manifest, hosts.flatMap((_, k) => Array.from({ length: perSource }, (_, i) => origins[k]!.url(`/nd/${i}.jpg`))).join('\n'));
    // A source is its URLs' host and port.
    const catalog = new Map(origins.map((o) => [`${o.host}:${o.port}`, { rate: 4 }]));
    const taskQueue = 'net-down';

    // Worker B: its own network, cut at will; its watch quick to tell (tests: 200 ms of quiet).
    let cut = false;
    const sockets = new Set<{ destroy(): void }>();
    const cuttable = (connect: Connector): Connector => (opts, cb) => {
      if (!cut) {
        return connect(opts, (err, socket) => {
          if (socket) sockets.add(socket);
          cb(err, socket as never);
        });
      }
      const err = Object.assign(new Error(`connect ENETUNREACH ${opts.hostname}:${opts.port} - Local (0.0.0.0:0)`), { code: 'ENETUNREACH', syscall: 'connect', errno: -101 });
      setImmediate(() => cb(err, null));
    };
    // Its connections die with the network (undici opens new ones, which cannot connect).
    const cutNetwork = () => {
      cut = true;
      for (const s of sockets) s.destroy();
    };
    const watch = new WorkerOutageWatch({ quietMs: 200 });
    let downAt: number | undefined;
    watch.listen(() => { if (watch.down) downAt ??= Date.now(); });
    const store = new LocalStore(path.join(dataDir, 'store'));
    const pipelineB = new ImagePipeline(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }), store, new Spool(path.join(dataDir, 'spool-b')), { wrapConnector: cuttable, outage: watch });
    // B's fetch activities: when each ran.
    const fetchesB: { start: number; end?: number }[] = [];
    const track: ActivityInterceptorsFactory = (ctx) => ({
      inbound: {
        async execute(input, next) {
          if (ctx.info.activityType !== 'fetchBatch') return next(input);
          const run: { start: number; end?: number } = { start: Date.now() };
          fetchesB.push(run);
          try {
            return await next(input);
          } finally {
            run.end = Date.now();
          }
        },
      } satisfies ActivityInboundCallsInterceptor,
    });
    const workerB = await createCrawlWorker({
      connection: env.nativeConnection, taskQueue,
      deps: { processor: pipelineB, recorder: new StoreRecorder(store), store },
      overrides: { interceptors: { activity: [track] } },
    });
    // Another machine's worker: a connection of its own (one connection takes one worker per queue).
    const connectionA = await NativeConnection.connect({ address: env.address });
    const workerA = await createCrawlWorker({ connection: connectionA, taskQueue, deps: defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] }) });

    // B alone first, until a site has answered it: a worker no site ever answered cannot tell
    // its outage from its sites'.
    const runB = workerB.run();
    let runA: Promise<void> | undefined;
    try {
      const summary = await startCrawl({ client: env.client, store, manifest, catalog, taskQueue });
      const deadline = Date.now() + 30_000;
      while (readRecords(dataDir).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(readRecords(dataDir).length).toBeGreaterThan(0);
      runA = workerA.run();
      cutNetwork();
      const results = await Promise.all([...summary.sources.keys()].map((s) => env.client.workflow.getHandle(monitorWorkflowId(s)).result() as Promise<MonitorStats>));
      expect(results.map((r) => r.urls.finished).reduce((x, y) => x + y, 0)).toBe(hosts.length * perSource);
      // Only the failures before B could tell (its first sites') counted: no source halted.
      expect(results.map((r) => r.haltReason)).toEqual(hosts.map(() => null));
    } finally {
      workerA.shutdown();
      workerB.shutdown();
      await Promise.all([runA, runB]);
      await pipelineB.close();
      await connectionA.close();
    }
    expect(downAt).toBeDefined();
    expect(watch.down).toBe(true);
    // Once B knew its network was down, one fetch at a time went on: the others (those running
    // then, and any a poll already out brought) handed their URLs back at once.
    const lingering = fetchesB
      .map((f) => ({ from: Math.max(f.start, downAt!) + 2_000, to: f.end ?? Infinity }))
      .filter((f) => f.to > f.from);
    const overlapping = lingering.filter((f, i) => lingering.some((g, j) => j !== i && g.from < f.to && f.from < g.to));
    expect(overlapping).toEqual([]);
    expect(fetchesB.filter((f) => f.start < downAt! && (f.end ?? Infinity) > downAt!).length).toBeGreaterThan(1);
    const records = readRecords(dataDir);
    expect(records).toHaveLength(hosts.length * perSource);
    expect(new Set(records.map((r) => r.url)).size).toBe(hosts.length * perSource);
    expect(records.every((r) => r.outcome === 'done')).toBe(true);
  });
});
