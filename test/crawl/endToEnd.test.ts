import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startCrawl } from '../../src/crawl/start';
import { listClosedSince } from '../../src/crawl/status';
import { Origin } from '../../src/demo/origin';
import { startOriginProcess, type OriginArrival } from '../../src/demo/startOriginProcess';
import { LocalStore } from '../../src/pipeline/store';
import { ceilings, maxInAnyWindow } from '../../src/politeness/pacing';
import { createCrawlWorker, defaultDeps } from '../../src/workers/worker';
import { SMALL_SOURCE_URLS, crawlMonitorWorkflow } from '../../src/workflows/monitor';
import { HEARTBEAT_EVERY_MS } from '../../src/shared/heartbeat';
import { statsQuery, stopUpdate } from '../../src/workflows/messages';
import { monitorWorkflowId } from '../../src/workflows/monitorState';
import type { MonitorStats } from '../../src/workflows/monitorStats';
import { createLocalEnv } from '../support/temporal';
import { CLI, ROOT, runCli } from '../support/cli';
import { imageOrigin } from '../support/origin';
import { jpeg } from '../support/images';
import { readRecords } from '../support/records';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    }).on('error', reject);
  });
}

describe('the crawl end to end (local dev server, real worker, loopback origins, local store)', () => {
  let env: TestWorkflowEnvironment;
  const origins: Origin[] = [];
  beforeAll(async () => {
    if (!fs.existsSync(path.join(ROOT, 'dist', 'src', 'cli', 'main.js'))) throw new Error('build first: npm run build (make test does it)');
    env = await createLocalEnv();
    const a = await imageOrigin('127.0.0.1');
    origins.push(a, await imageOrigin('127.0.0.2', a.port), await imageOrigin('127.0.0.3', a.port), await imageOrigin('127.0.0.4', a.port));
  });
  afterAll(async () => {
    await Promise.all(origins.map((o) => o.stop()));
    await env?.teardown();
  });

  it('crawls several sources to one record per URL, each under its ceiling at the origin', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'e2e-'));
    // The sites run in a process of their own, as real sites do: an origin inside this process
    // (which also runs the worker) logs an arrival late whenever the worker keeps the event loop
    // busy, and two late-logged arrivals look closer together than they were sent.
    const siteDir = path.join(dataDir, 'site');
    fs.mkdirSync(siteDir);
    fs.writeFileSync(path.join(siteDir, '0.jpg'), await jpeg(400, 300));
    const sites = await startOriginProcess(siteDir, ['127.0.0.1', '127.0.0.2', '127.0.0.3'], path.join(dataDir, 'arrivals.log'));
    let arrivals: OriginArrival[] = [];
    const [a, b, c] = ['127.0.0.1', '127.0.0.2', '127.0.0.3'].map((ip) => `${ip}:${sites.port}`) as [string, string, string];
    const at = (host: string, p: string) => `http://${host}${p}`;
    try {
      const lines: string[] = [];
      for (let i = 0; i < 30; i++) lines.push(JSON.stringify({ url: at(a, `/e2e/a/${i}.jpg`) }));
      for (let i = 0; i < 60; i++) lines.push(JSON.stringify({ url: at(b, `/e2e/b/${i}.jpg`), source: 'fast' }));
      for (let i = 0; i < 20; i++) lines.push(JSON.stringify({ url: at(c, `/e2e/c/${i}.jpg`) }));
      lines.push(JSON.stringify({ url: at(c, '/missing/1.jpg') }));
      lines.push('{"url": "not a url"}');
      const manifest = path.join(dataDir, 'manifest.ndjson');
      fs.writeFileSync(manifest, lines.join('\n'));
      const catalog = new Map([[a, { rate: 4 }], ['fast', { rate: 15, burst: 2 }], [c, { rate: 3 }]]);
      const taskQueue = 'e2e';
      const deps = defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] });
      const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps });
      const startedMs = Date.now();
      await worker.runUntil(async () => {
        const bad: number[] = [];
        const summary = await startCrawl({ client: env.client, store: new LocalStore(path.join(dataDir, 'store')), manifest, catalog, taskQueue, chunkSize: 25, onBadLine: (l) => bad.push(l.line) });
        expect(bad).toEqual([112]);
        expect([...summary.sources.keys()].sort()).toEqual([a, c, 'fast'].sort());
        const results = await Promise.all([...summary.sources.keys()].map((s) => env.client.workflow.getHandle(monitorWorkflowId(s)).result() as Promise<MonitorStats>));
        expect(results.map((r) => r.urls.finished).reduce((x, y) => x + y, 0)).toBe(111);
        // How `run` learns of closes (StatusPoller): the server's listing names them, and only
        // those closed after the time asked (the listing's query is ours, not the SDK's).
        let closed = new Set<string>();
        for (let i = 0; i < 50 && closed.size < 3; i++) {
          closed = await listClosedSince(env.client, startedMs);
          if (closed.size < 3) await new Promise((r) => setTimeout(r, 100));
        }
        expect([...closed].sort()).toEqual([...summary.sources.keys()].sort());
        expect((await listClosedSince(env.client, Date.now() + 60_000)).size).toBe(0);
      });
    } finally {
      arrivals = await sites.stop();
    }
    const records = readRecords(dataDir);
    expect(records).toHaveLength(111);
    expect(new Set(records.map((r) => r.url)).size).toBe(111);
    expect(records.filter((r) => r.outcome === 'linkrot').map((r) => r.url)).toEqual([at(c, '/missing/1.jpg')]);
    expect(records.filter((r) => r.outcome === 'done')).toHaveLength(110);
    // What each site actually saw, robots.txt included.
    const seen = (host: string) => arrivals.filter((r) => r.host === host).map((r) => r.atMs);
    const check = (host: string, ceiling: number) => {
      if (maxInAnyWindow(seen(host), 1_000) > ceiling) {
        const first = Math.min(...seen(host));
        const trace = arrivals.filter((r) => r.host === host).map((r) => `${r.atMs - first} ${r.path}`).join('\n');
        throw new Error(`${host} saw more than ${ceiling} requests in a second:\n${trace}`);
      }
    };
    check(a, ceilings(4, 0).perSecond);
    check(b, ceilings(15, 2).perSecond);
    check(c, ceilings(3, 0).perSecond);
    // Each image downloaded once: no retried attempt or second grant asked for it again.
    const imagePaths = arrivals.filter((r) => r.path.startsWith('/e2e/')).map((r) => r.path);
    expect(imagePaths).toHaveLength(110);
    expect(new Set(imagePaths).size).toBe(110);
  });

  // A source of 40 URLs has its batch run by its monitor (SMALL_SOURCE_URLS): stopped, that batch's fetch stops the same way.
  it.each([
    ['its batch a child workflow', 'stop-restart', 120, 4],
    ['a small source', 'stop-restart-small', 40, 2],
  ])('takes a stopped crawl up again when the same manifest is started: the rest is crawled, nothing twice (%s)', async (_, source, total, rate) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `${source}-`));
    const o = origins[1]!;
    const manifest = path.join(dataDir, 'manifest.ndjson');
    const dir = `/${source}/`;
    fs.writeFileSync(manifest, Array.from({ length: total }, (_, i) => JSON.stringify({ url: o.url(`${dir}${i}.jpg`), source })).join('\n'));
    const store = new LocalStore(path.join(dataDir, 'store'));
    const catalog = new Map([[source, { rate }]]);
    const taskQueue = source;
    const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps: defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] }) });
    const handle = () => env.client.workflow.getHandle(monitorWorkflowId(source));
    await worker.runUntil(async () => {
      await startCrawl({ client: env.client, store, manifest, catalog, taskQueue });
      const deadline = Date.now() + 60_000;
      while (readRecords(dataDir).length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      expect(await handle().executeUpdate(stopUpdate)).toBe('stopped');
      // The monitor completes only once the running fetch activity has learnt of the stop (at
      // its next heartbeat) and recorded what it finished: nothing is fetched or recorded after.
      const stoppedAt = Date.now();
      const stopped = (await handle().result()) as MonitorStats;
      expect(stopped.state).toBe('stopped');
      expect(Date.now() - stoppedAt).toBeLessThan(HEARTBEAT_EVERY_MS + 10_000);
      const atStop = readRecords(dataDir).length;
      // Its final status counts every URL recorded, the grant that ran into the stop included.
      expect(stopped.counts.done).toBe(atStop);
      const fetchedAtStop = o.requests.filter((r) => r.path.startsWith(dir)).length;
      expect(atStop).toBeGreaterThanOrEqual(1);
      expect(atStop).toBeLessThan(total);
      await new Promise((r) => setTimeout(r, 1_500));
      expect(readRecords(dataDir).length).toBe(atStop);
      expect(o.requests.filter((r) => r.path.startsWith(dir)).length).toBe(fetchedAtStop);
      // Started again at once: a new monitor, the same chunk; its batch skips what was recorded.
      await startCrawl({ client: env.client, store, manifest, catalog, taskQueue });
      const stats = (await handle().result()) as MonitorStats;
      expect(stats.urls).toMatchObject({ total, finished: total });
      // The new monitor counts what the first crawl recorded among its own outcomes.
      expect(stats.counts.done).toBe(total);
      const children = (await handle().fetchHistory()).events!.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes).length;
      expect(children > 0).toBe(total > SMALL_SOURCE_URLS);
    });
    const records = readRecords(dataDir);
    expect(records).toHaveLength(total);
    expect(new Set(records.map((r) => r.url)).size).toBe(total);
    const fetched = o.requests.filter((r) => r.path.startsWith(dir)).map((r) => r.path);
    expect(new Set(fetched).size).toBe(total);
    // A request in flight when the stop reached the activity finished (CANCEL_GRACE_MS): none is made again.
    expect(fetched).toHaveLength(total);
  });

  it('downloads nothing a second time when another manifest lists images its source downloaded', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'two-manifests-'));
    const o = origins[2]!;
    const url = (i: number) => o.url(`/tm/${i}.jpg`);
    const write = (name: string, ids: number[]) => {
      const file = path.join(dataDir, name);
      fs.writeFileSync(file, ids.map((i) => `${JSON.stringify({ url: url(i), source: 'two-manifests' })}\n`).join(''));
      return file;
    };
    const first = write('first.ndjson', [0, 1, 2, 3, 4, 5, 6, 7]);
    // Re-sorted, four of the first's images and three new ones.
    const second = write('second.ndjson', [9, 6, 1, 8, 3, 0, 10]);
    const store = new LocalStore(path.join(dataDir, 'store'));
    const catalog = new Map([['two-manifests', { rate: 8 }]]);
    const taskQueue = 'two-manifests';
    const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps: defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] }) });
    const handle = () => env.client.workflow.getHandle(monitorWorkflowId('two-manifests'));
    await worker.runUntil(async () => {
      await startCrawl({ client: env.client, store, manifest: first, catalog, taskQueue });
      expect(((await handle().result()) as MonitorStats).counts.done).toBe(8);
      const summary = await startCrawl({ client: env.client, store, manifest: second, catalog, taskQueue });
      expect(summary.downloadedBefore).toBe(4);
      const stats = (await handle().result()) as MonitorStats;
      expect(stats.urls).toMatchObject({ total: 3, finished: 3 });
    });
    const fetched = o.requests.filter((r) => r.path.startsWith('/tm/')).map((r) => r.path);
    expect(fetched).toHaveLength(11);
    expect(new Set(fetched).size).toBe(11);
    const records = readRecords(dataDir);
    expect(records.map((r) => r.url).sort()).toEqual(Array.from({ length: 11 }, (_, i) => url(i)).sort());
  });

  it('downloads an image once when a manifest listing it is started while another still crawls it, or was stopped before it', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'queued-elsewhere-'));
    const o = origins[2]!;
    const url = (dir: string, i: number) => o.url(`/${dir}/${i}.jpg`);
    const write = (name: string, source: string, dir: string, ids: number[]) => {
      const file = path.join(dataDir, name);
      fs.writeFileSync(file, ids.map((i) => `${JSON.stringify({ url: url(dir, i), source })}\n`).join(''));
      return file;
    };
    const store = new LocalStore(path.join(dataDir, 'store'));
    const catalog = new Map([['queued-running', { rate: 4 }], ['queued-stopped', { rate: 4 }]]);
    const taskQueue = 'queued-elsewhere';
    const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps: defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] }) });
    const handle = (source: string) => env.client.workflow.getHandle(monitorWorkflowId(source));
    const fetched = (dir: string) => o.requests.filter((r) => r.path.startsWith(`/${dir}/`)).map((r) => r.path);
    await worker.runUntil(async () => {
      // The second manifest, re-sorted with new URLs among the first's, is started at once: the
      // first's chunk (12 URLs at 4/s) is still being crawled.
      await startCrawl({ client: env.client, store, manifest: write('running-1.ndjson', 'queued-running', 'qr', Array.from({ length: 12 }, (_, i) => i)), catalog, taskQueue });
      const second = await startCrawl({ client: env.client, store, manifest: write('running-2.ndjson', 'queued-running', 'qr', [11, 3, 12, 5, 13]), catalog, taskQueue });
      expect(second.sources.get('queued-running')).toMatchObject({ queuedElsewhere: 3, chunksOfOthers: 1 });
      expect(((await handle('queued-running').result()) as MonitorStats).urls).toMatchObject({ total: 14, finished: 14 });

      // A crawl stopped part-way: a manifest started later into the store leaves the first's
      // URLs to its chunk and starts that chunk again, so they are neither lost nor fetched twice.
      await startCrawl({ client: env.client, store, manifest: write('stopped-1.ndjson', 'queued-stopped', 'qs', Array.from({ length: 40 }, (_, i) => i)), catalog, taskQueue });
      const deadline = Date.now() + 60_000;
      while (fetched('qs').length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(await handle('queued-stopped').executeUpdate(stopUpdate)).toBe('stopped');
      expect(((await handle('queued-stopped').result()) as MonitorStats).urls.finished).toBeLessThan(40);
      const later = await startCrawl({ client: env.client, store, manifest: write('stopped-2.ndjson', 'queued-stopped', 'qs', [39, 38, 40]), catalog, taskQueue });
      expect(later.sources.get('queued-stopped')).toMatchObject({ queuedElsewhere: 2, chunksOfOthers: 1 });
      expect(((await handle('queued-stopped').result()) as MonitorStats).counts.done).toBe(41);
    });
    for (const [dir, n] of [['qr', 14], ['qs', 41]] as const) {
      expect(fetched(dir).sort()).toEqual(Array.from({ length: n }, (_, i) => `/${dir}/${i}.jpg`).sort());
      const records = readRecords(dataDir).filter((r) => String(r.url).includes(`/${dir}/`));
      expect(records.map((r) => r.url).sort()).toEqual(Array.from({ length: n }, (_, i) => url(dir, i)).sort());
    }
  });

  // SIGTERM is a deploy's rolling restart: the worker cancels its fetch activities, each of which
  // lets a request on the wire finish and heartbeats what it has done, and exits; the next worker
  // takes over without asking the site for anything twice.
  // 40 URLs: a small source, whose batch its monitor runs (SMALL_SOURCE_URLS).
  it.each([['SIGKILL', 60], ['SIGTERM', 60], ['SIGKILL', 40]] as const)('survives a worker stopped with %s mid-crawl: every URL ends with exactly one record (%i URLs)', async (stopWith, total) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kill-'));
    const a = origins[3]!; // a source of its own
    const manifest = path.join(dataDir, 'manifest.txt');
    const prefix = `/${stopWith.toLowerCase()}-${total}/`;
    fs.writeFileSync(manifest, Array.from({ length: total }, (_, i) => a.url(`${prefix}${i}.jpg`)).join('\n'));
    // CRAWL_ALLOW_NETWORKS as an operator exports it for `start` and workers alike: `start` warns of nothing.
    const childEnv = { TEMPORAL_ADDRESS: env.address, CRAWL_DATA_DIR: dataDir, CRAWL_TASK_QUEUE: `kill-test-${stopWith}-${total}`, CRAWL_LOG_LEVEL: 'warn', CRAWL_ALLOW_NETWORKS: '127.0.0.0/8' };
    const logFile = path.join(dataDir, 'worker.log');
    const startWorker = (): ChildProcess => {
      const fd = fs.openSync(logFile, 'a');
      return spawn(process.execPath, [CLI, 'worker', '--allow-network', '127.0.0.0/8'], { env: { ...process.env, ...childEnv }, stdio: ['ignore', fd, fd] });
    };
    let worker = startWorker();
    try {
      const catalogFile = path.join(dataDir, 'catalog.json');
      fs.writeFileSync(catalogFile, JSON.stringify([{ name: `127.0.0.4:${a.port}`, rate: 6 }]));
      const started = await runCli(['start', manifest, '--catalog', catalogFile], childEnv);
      expect(started.stderr).not.toMatch(/crawl: /);
      expect(started.stdout).toContain(`${total} URLs`);
      // Mid-crawl at the site: a grant's records are written when its activity returns, and a
      // small source's first grant is the whole source.
      const asked = () => a.requests.filter((r) => r.path.startsWith(prefix)).length;
      const deadline = Date.now() + 60_000;
      while (asked() < 15 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      if (asked() < 15) throw new Error(`no progress; worker log:\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`);
      const stoppedAt = Date.now();
      worker.kill(stopWith);
      await new Promise((r) => worker.once('exit', r));
      // Within a deploy's usual grace period (Kubernetes: 30 s), not killed at its end.
      if (stopWith === 'SIGTERM') expect(Date.now() - stoppedAt).toBeLessThan(20_000);
      const atKill = readRecords(dataDir).length;
      expect(atKill).toBeLessThan(total);
      worker = startWorker();
      const stats = (await env.client.workflow.getHandle(monitorWorkflowId(`127.0.0.4:${a.port}`)).result()) as MonitorStats;
      expect(stats.urls).toMatchObject({ total, finished: total });
      const records = readRecords(dataDir);
      expect(records).toHaveLength(total);
      expect(new Set(records.map((r) => r.url)).size).toBe(total);
      expect(records.every((r) => r.outcome === 'done')).toBe(true);
      const paths = a.requests.map((r) => r.path).filter((p) => p.startsWith(prefix));
      expect(new Set(paths).size).toBe(total);
      // Killed, its grant is retried on the next worker, which reads what the dead one finished
      // from its journal on the same disk: only a request on the wire at the kill goes again
      // (before the journal: what it fetched since its last heartbeat, ~15 at 6/s).
      expect(paths.length).toBeLessThanOrEqual(stopWith === 'SIGTERM' ? total : total + 1);
      // The same records as one NDJSON stream, through the CLI.
      const exported = await runCli(['export', `127.0.0.4:${a.port}`], childEnv);
      expect(exported.code).toBe(0);
      const lines = exported.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { url: string });
      expect(lines).toHaveLength(total);
      expect(new Set(lines.map((l) => l.url)).size).toBe(total);
      // Starting the same manifest again crawls nothing twice.
      const before = a.requests.length;
      const again = await runCli(['start', manifest], childEnv);
      expect(again.stdout).toContain(`${total} already crawled`);
      await new Promise((r) => setTimeout(r, 1_000));
      expect(a.requests.length).toBe(before);
      // Both worker starts ran the workflow code bundled by the build, not bundled afresh.
      expect(fs.readFileSync(logFile, 'utf8')).not.toMatch(/workflow-bundle/);
    } finally {
      worker.kill('SIGKILL');
    }
  });

  it('logs a monitor\'s state transitions in the `crawl worker` log, and none of the SDK\'s own chatter', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wlog-'));
    const taskQueue = 'worker-log';
    const childEnv = { TEMPORAL_ADDRESS: env.address, CRAWL_DATA_DIR: dataDir, CRAWL_TASK_QUEUE: taskQueue, CRAWL_ALLOW_NETWORKS: '127.0.0.9' };
    const child = spawn(process.execPath, [CLI, 'worker', '--allow-network', '127.0.0.0/8'], { env: { ...process.env, ...childEnv }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d) => { stderr += d; });
    const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
      taskQueue, workflowId: monitorWorkflowId('worker-log.test'),
      args: [{ source: 'worker-log.test', config: { rate: 1 }, options: { finishWhenDrained: false } }],
    });
    try {
      expect((await runCli(['pause', 'worker-log.test'], childEnv)).stdout).toContain('worker-log.test: paused');
      const deadline = Date.now() + 10_000;
      while (!stderr.includes('monitor paused') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const lines = stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines.find((l) => l.msg === 'monitor paused')).toMatchObject({ level: 30, sdkComponent: 'workflow', source: 'worker-log.test', detail: 'by operator', workflowId: monitorWorkflowId('worker-log.test') });
      // Only the sources in a state an operator asks for, picked from the listing.
      const paused = await runCli(['status', '--state', 'paused'], childEnv);
      const rows = paused.stdout.split('\n').slice(1).filter((l) => /^\S+\s+\S/.test(l) && !/ worker\(s\) poll /.test(l));
      expect(rows.some((r) => r.startsWith('worker-log.test '))).toBe(true);
      expect(rows.every((r) => /^\S+\s+paused\s/.test(r))).toBe(true);
      const halted = await runCli(['status', '--state', 'halted', '--json'], childEnv);
      expect((JSON.parse(halted.stdout) as { sources: { source: string }[] }).sources.map((s) => s.source)).not.toContain('worker-log.test');
      expect((await runCli(['status', '--state', 'stuck'], childEnv)).stderr).toMatch(/unknown state "stuck": give one or more of running, paused/);
      // Its start says what it serves, where from, and what it may reach (before: the task queue and CPUs only).
      expect(lines.find((l) => l.event === 'worker.start')).toMatchObject({
        taskQueue, address: env.address, namespace: 'default', store: `local directory ${path.join(dataDir, 'store')}`, allowNetworks: ['127.0.0.9', '127.0.0.0/8'],
        userAgent: expect.stringMatching(/^\S+\/\S+ \(\+https?:\/\//),
      });
      // The SDK's own messages (worker lifecycle, core) stay at TEMPORAL_LOG_LEVEL (WARN).
      expect(lines.filter((l) => l.event === 'temporal.sdk' && l.sdkComponent !== 'workflow' && (l.level as number) < 40)).toEqual([]);
    } finally {
      await handle.terminate('test over');
      child.kill('SIGKILL');
    }
  });

  it('`crawl run` against TEMPORAL_ADDRESS says what its workers need, and a `crawl worker` started so finishes its crawl', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'run-ext-'));
    const out = path.join(dir, 'out');
    const taskQueue = 'run-external';
    const a = origins[3]!;
    const urls = Array.from({ length: 6 }, (_, i) => a.url(`/run-ext/${i}.jpg`));
    fs.writeFileSync(path.join(dir, 'm.txt'), urls.join('\n'));
    fs.writeFileSync(path.join(dir, 'catalog.json'), JSON.stringify([{ name: `127.0.0.4:${a.port}`, rate: 5 }]));
    const childEnv = { TEMPORAL_ADDRESS: env.address, CRAWL_TASK_QUEUE: taskQueue, CRAWL_LOG_LEVEL: 'warn' };
    const run = spawn(process.execPath, [CLI, 'run', path.join(dir, 'm.txt'), '--catalog', path.join(dir, 'catalog.json'), '--out', out, '--allow-network', '127.0.0.0/8'],
      { env: { ...process.env, ...childEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    run.stdout!.on('data', (d) => { stdout += d; });
    const ended = new Promise<number | null>((resolve) => run.once('exit', resolve));
    let worker: ReturnType<typeof spawn> | undefined;
    try {
      const deadline = Date.now() + 30_000;
      while (!stdout.includes('starts no worker') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      // Before, nothing said so: a worker with its own CRAWL_DATA_DIR found no URL list, the
      // source was held as "store failing" every minute, and the run waited for good.
      expect(stdout).toContain(`this run starts no worker (TEMPORAL_ADDRESS is set): crawl workers on task queue ${taskQueue} must use its store, ` +
        `local directory ${path.join(out, 'store')}: start them with --data-dir ${out} (or CRAWL_DATA_DIR=${out}); ` +
        'the networks this run was given are theirs to open: --allow-network 127.0.0.0/8 (or CRAWL_ALLOW_NETWORKS=127.0.0.0/8)');
      // Started as the note says: --data-dir names the run's store over a CRAWL_DATA_DIR of its own.
      worker = spawn(process.execPath, [CLI, 'worker', '--allow-network', '127.0.0.0/8', '--data-dir', out], { env: { ...process.env, ...childEnv, CRAWL_DATA_DIR: path.join(dir, 'elsewhere') }, stdio: 'ignore' });
      expect(await ended).toBe(0);
      const records = readRecords(out);
      expect(new Set(records.map((r) => r.url))).toEqual(new Set(urls));
      expect(records.every((r) => r.outcome === 'done')).toBe(true);
    } finally {
      run.kill('SIGKILL');
      worker?.kill('SIGKILL');
    }
  });

  it('serves Prometheus metrics from `crawl worker` with CRAWL_METRICS_ADDRESS: the SDK\'s, and what the crawl fetched', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'metrics-'));
    const port = await freePort();
    const childEnv = { TEMPORAL_ADDRESS: env.address, CRAWL_DATA_DIR: dataDir, CRAWL_TASK_QUEUE: 'metrics-test', CRAWL_METRICS_ADDRESS: `127.0.0.1:${port}` };
    const o = origins[2]!;
    const source = 'metrics.test';
    const manifest = path.join(dataDir, 'manifest.ndjson');
    const urls = [...Array.from({ length: 4 }, (_, i) => o.url(`/metrics/${i}.jpg`)), o.url('/missing/1.jpg')];
    // A site that pushes back once: its monitor's throttled event is counted too.
    const image = await jpeg(200, 100);
    let pushedBack = false;
    const pushy = await new Origin().route('*', (req, res) => {
      if (req.url === '/robots.txt') return void res.writeHead(404).end();
      if (!pushedBack) {
        pushedBack = true;
        return void res.writeHead(429, { 'retry-after': '1' }).end();
      }
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': image.length }).end(image);
    }).start('127.0.0.1');
    const pushyUrls = Array.from({ length: 3 }, (_, i) => pushy.url(`/pushy/${i}.jpg`));
    fs.writeFileSync(manifest, [...urls.map((url) => JSON.stringify({ url, source })), ...pushyUrls.map((url) => JSON.stringify({ url, source: 'pushy.test' }))].join('\n'));
    const catalog = path.join(dataDir, 'catalog.json');
    fs.writeFileSync(catalog, JSON.stringify([{ name: source, rate: 10 }, { name: 'pushy.test', rate: 10 }]));
    const child = spawn(process.execPath, [CLI, 'worker', '--allow-network', '127.0.0.0/8'], { env: { ...process.env, ...childEnv }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d) => { stderr += d; });
    try {
      const deadline = Date.now() + 20_000;
      while (!(await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.ok, () => false))) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error('the worker serves no metrics');
        await new Promise((r) => setTimeout(r, 100));
      }
      // A second process asking for the same address is told so, before it does anything.
      const taken = await runCli(['worker'], childEnv);
      expect(taken.code).toBe(1);
      expect(taken.stderr).toMatch(new RegExp(`^crawl: cannot serve metrics on 127\\.0\\.0\\.1:${port} \\(CRAWL_METRICS_ADDRESS\\): .*[Aa]ddress already in use`));
      // Commands that run no worker leave the address alone.
      expect((await runCli(['status'], childEnv)).stderr).not.toMatch(/cannot serve metrics|CRAWL_METRICS_ADDRESS/);
      expect((await runCli(['start', manifest, '--catalog', catalog], childEnv)).code).toBe(0);
      const stats = (await env.client.workflow.getHandle(monitorWorkflowId(source)).result()) as MonitorStats;
      expect(stats.urls).toMatchObject({ total: 5, finished: 5 });
      const pushyStats = (await env.client.workflow.getHandle(monitorWorkflowId('pushy.test')).result()) as MonitorStats;
      expect(pushyStats.urls).toMatchObject({ total: 3, finished: 3 });
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      // The monitors' policy events, by event (the SDK adds the workflow's type and task queue).
      const monitorEvents = (event: string) => Number(new RegExp(`^crawl_monitor_events_total\\{[^}]*event="${event}"[^}]*\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
      expect(monitorEvents('throttled')).toBe(1);
      expect(text).toMatch(/^crawl_monitor_events_total\{[^}]*taskQueue="metrics-test"[^}]*workflowType="crawlMonitorWorkflow"/m);
      expect(text).not.toMatch(/^crawl_monitor_events_total\{[^}]*event="(halted|cooling)"/m);
      const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}".]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
      expect(value('crawl_urls_finished_total{outcome="done"}')).toBe(7);
      expect(value('crawl_urls_finished_total{outcome="linkrot"}')).toBe(1);
      expect(value('crawl_requests_total{kind="image",status="2xx"}')).toBe(7);
      expect(value('crawl_requests_total{kind="image",status="4xx"}')).toBe(2);
      expect(value('crawl_requests_total{kind="robots.txt"}')).toBe(2);
      expect(value('crawl_time_to_first_byte_count')).toBe(9);
      const bytes = readRecords(dataDir).reduce((sum, r) => sum + ((r as { bytes?: number }).bytes ?? 0), 0);
      expect(bytes).toBeGreaterThan(0);
      expect(value('crawl_downloaded_bytes_total')).toBe(bytes);
      // The SDK's own: how long activities and workflow tasks waited for this worker.
      expect(Number(/^temporal_activity_schedule_to_start_latency_count\{[^}]*task_queue="metrics-test"[^}]*\} (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(0);
      expect(text).toMatch(/^temporal_workflow_task_schedule_to_start_latency_count\{/m);
    } catch (err) {
      throw new Error(`${(err as Error).message}\nworker log:\n${stderr.slice(-3000)}`);
    } finally {
      child.kill('SIGKILL');
      await pushy.stop();
    }
  });

  it('ends `crawl status --watch` quietly once its reader has gone (`| head -1`)', async () => {
    const child = spawn(process.execPath, [CLI, 'status', '--watch', '--interval', '1'], { env: { ...process.env, TEMPORAL_ADDRESS: env.address }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    const first = await new Promise<string>((resolve) => child.stdout.once('data', (d) => resolve(String(d))));
    expect(first).toMatch(/^\{"event":"monitoring_update"/);
    child.stdout.destroy();
    const code = await Promise.race([
      new Promise<number | null>((resolve) => child.on('exit', resolve)),
      new Promise<string>((resolve) => setTimeout(() => resolve('still running after 10 s'), 10_000)),
    ]);
    child.kill('SIGKILL');
    expect(code).toBe(0);
    expect(stderr).not.toMatch(/EPIPE|Error/);
  });

  it('follows in `crawl status --watch` the sources whose crawls start after the watch began', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'watch-follow-'));
    const manifest = path.join(dataDir, 'manifest.ndjson');
    const source = 'watch-follow.test';
    fs.writeFileSync(manifest, `${JSON.stringify({ url: origins[0]!.url('/watch-follow/0.jpg'), source })}\n`);
    // No worker on this queue: the monitor is listed, and its row shows what its search attributes say.
    const childEnv = { TEMPORAL_ADDRESS: env.address, CRAWL_DATA_DIR: dataDir, CRAWL_TASK_QUEUE: 'watch-follow-test', CRAWL_LOG_LEVEL: 'warn' };
    const child = spawn(process.execPath, [CLI, 'status', '--watch', '--interval', '1'], { env: { ...process.env, ...childEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (d) => { stdout += d; });
    const lines = () => stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { sources: Record<string, unknown> });
    try {
      for (const until = Date.now() + 30_000; lines().length === 0 && Date.now() < until;) await new Promise((r) => setTimeout(r, 100));
      expect(lines().length).toBeGreaterThan(0);
      expect(lines().some((l) => source in l.sources)).toBe(false);
      expect((await runCli(['start', manifest], childEnv)).code).toBe(0);
      // Before, a watch showed the sources there were when it began, for as long as it ran.
      for (const until = Date.now() + 30_000; !lines().some((l) => source in l.sources) && Date.now() < until;) await new Promise((r) => setTimeout(r, 200));
      expect(lines().find((l) => source in l.sources)?.sources[source]).toMatchObject({ state: 'running (last known)' });
    } finally {
      child.kill('SIGKILL');
      await env.client.workflow.getHandle(monitorWorkflowId(source)).terminate('test over').catch(() => undefined);
    }
  });

  it('gives clear errors for an unknown source, a bad rate, a missing manifest and a source without records', async () => {
    const childEnv = { TEMPORAL_ADDRESS: env.address };
    const unknown = await runCli(['pause', 'no-such-source'], childEnv);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no crawl monitor for source "no-such-source".*crawl status/);
    const badRate = await runCli(['set-rate', 'anything', '-5'], childEnv);
    expect(badRate.code).not.toBe(0);
    expect(badRate.stderr).toMatch(/rate must be greater than 0/);
    // Checked here too, without a server (this address reaches none): before, it went to the monitor.
    const badBurst = await runCli(['set-rate', 'anything', '5', '--burst', '-2'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(badBurst.code).not.toBe(0);
    expect(badBurst.stderr).toMatch(/burst must be a whole number from 0 to 1000/);
    // Number() read it as hexadecimal: 16 requests/s.
    const hexRate = await runCli(['set-rate', 'anything', '0x10'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(hexRate.code).not.toBe(0);
    expect(hexRate.stderr).toMatch(/rate must be a finite number of requests per second/);
    const badCap = await runCli(['set-max-retry-after', '2h', 'anything'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(badCap.code).not.toBe(0);
    expect(badCap.stderr).toMatch(/the longest Retry-After must be a number of seconds from 1 to 86400/);
    const unknownCap = await runCli(['set-max-retry-after', '60', 'no-such-source'], childEnv);
    expect(unknownCap.code).toBe(1);
    expect(unknownCap.stderr).toMatch(/no crawl monitor for source "no-such-source"/);
    const badConnections = await runCli(['set-max-connections', '0', 'anything'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(badConnections.code).not.toBe(0);
    expect(badConnections.stderr).toMatch(/maxConnections must be a whole number of requests open at once from 1 to 4096, or none/);
    const unknownConnections = await runCli(['set-max-connections', 'none', 'no-such-source'], childEnv);
    expect(unknownConnections.code).toBe(1);
    expect(unknownConnections.stderr).toMatch(/no crawl monitor for source "no-such-source"/);
    // Inputs are checked before anything else: the manifest's error, not the server's.
    for (const command of ['start', 'run']) {
      const noManifest = await runCli([command, '/no/such/manifest.ndjson'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
      expect(noManifest.code).toBe(1);
      expect(noManifest.stderr).toMatch(/crawl: manifest \/no\/such\/manifest\.ndjson does not exist/);
    }
    // An empty manifest is answered at once, without a server (this address reaches none).
    const emptyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'empty-'));
    fs.writeFileSync(path.join(emptyDir, 'm.ndjson'), '\uFEFF\n  \r\n\n');
    const empty = await runCli(['run', path.join(emptyDir, 'm.ndjson'), '--out', path.join(emptyDir, 'out')], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(empty.code).toBe(0);
    expect(empty.stdout).toMatch(/nothing to crawl: .*m\.ndjson lists no URLs/);
    // A manifest with no usable line is the wrong file, not a finished crawl.
    const badDir = fs.mkdtempSync(path.join(os.tmpdir(), 'all-bad-'));
    fs.writeFileSync(path.join(badDir, 'm.txt'), 'garbage\nftp://x.example/1.jpg\n');
    for (const command of [['run', '--out', badDir], ['start']]) {
      const allBad = await runCli([command[0]!, path.join(badDir, 'm.txt'), ...command.slice(1)], { TEMPORAL_ADDRESS: env.address, CRAWL_DATA_DIR: badDir });
      expect(allBad.code).toBe(1);
      expect(allBad.stderr).toMatch(/line 2: scheme ftp: not allowed[\s\S]*has no URL that can be crawled: all 2 line\(s\) with content are bad/);
    }
    const emptyData = fs.mkdtempSync(path.join(os.tmpdir(), 'export-'));
    const noStore = await runCli(['export', 'no-such-source'], { CRAWL_DATA_DIR: emptyData });
    expect(noStore.code).toBe(1);
    expect(noStore.stderr).toMatch(/there is no local directory .*\/store: give --data-dir the directory `crawl run --out` wrote/);
    fs.mkdirSync(path.join(emptyData, 'store'));
    const noRecords = await runCli(['export', 'no-such-source'], { CRAWL_DATA_DIR: emptyData });
    expect(noRecords.code).toBe(1);
    expect(noRecords.stderr).toMatch(/no records for source "no-such-source".*crawl status/);
    const noServer = await runCli(['status'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(noServer.code).toBe(1);
    expect(noServer.stderr).toMatch(/cannot reach the Temporal server at 127\.0\.0\.1:1.*crawl dev-server/);
  });

  it('stops `crawl run` in order on Ctrl-C, keeping the records so far and saying how to go on; status names a source no worker serves', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'interrupt-'));
    const manifest = path.join(dataDir, 'manifest.txt');
    fs.writeFileSync(manifest, Array.from({ length: 5 }, (_, i) => origins[0]!.url(`/interrupt/${i}.jpg`)).join('\n'));
    // No worker serves this task queue: the crawl waits, as a long one would, until interrupted.
    const child = spawn(process.execPath, [CLI, 'run', manifest, '--out', dataDir], {
      env: { ...process.env, TEMPORAL_ADDRESS: env.address, CRAWL_TASK_QUEUE: 'interrupt-test', CRAWL_LOG_LEVEL: 'warn' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const deadline = Date.now() + 60_000;
    while (!stdout.includes('crawling 1 source(s)') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(stdout).toContain('crawling 1 source(s)');
    child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(130);
    expect(stderr).toMatch(/crawl: interrupted \(SIGINT\)\. Nothing is lost: run the same command again/);
    expect(stdout).toContain('metadata so far');
    expect(fs.existsSync(path.join(dataDir, 'metadata.ndjson'))).toBe(true);
    // Still no worker for it: status says so instead of waiting for one for ever.
    const status = await runCli(['status', `127.0.0.1:${origins[0]!.port}`], { TEMPORAL_ADDRESS: env.address });
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/no worker answered within 10 s: is a crawl worker running on task queue interrupt-test\?/);
  });

  it('answers `crawl status` within --within when monitors do not answer, showing the rest as their search attributes say', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'within-'));
    const manifest = path.join(dataDir, 'manifest.ndjson');
    const sources = Array.from({ length: 18 }, (_, i) => `within-${String(i).padStart(2, '0')}.test`);
    fs.writeFileSync(manifest, sources.map((source, i) => JSON.stringify({ url: origins[0]!.url(`/within/${i}.jpg`), source })).join('\n'));
    // No worker serves this task queue: every status query waits its 10 s and goes unanswered.
    const childEnv = { TEMPORAL_ADDRESS: env.address, CRAWL_DATA_DIR: dataDir, CRAWL_TASK_QUEUE: 'within-test', CRAWL_LOG_LEVEL: 'warn' };
    try {
      const started = await runCli(['start', manifest], childEnv);
      expect(started.code).toBe(0);
      // The workers' guard is theirs: `start` says what they need to crawl these (before: nothing).
      expect(started.stderr).toContain(`crawl: 18 URL(s) are on addresses the network guard refuses unless it is opened for them: 127.0.0.1:${origins[0]!.port} (18 URL(s): address 127.0.0.1 is loopback). ` +
        'Workers crawl them only if started with --allow-network 127.0.0.1 (or CRAWL_ALLOW_NETWORKS; hosts you trust only): a worker started without it records each as refused, without asking for it\n');
      const status = await runCli(['status', '--within', '1'], childEnv);
      expect(status.code).toBe(0);
      // 16 queries at a time: at most 16 monitors are asked in the first second, the others not at all.
      const notAsked = Number(/crawl: (\d+) monitor\(s\) not asked within 1 s .*Name sources to see them in full, or give --within a longer time/.exec(status.stderr)?.[1]);
      expect(notAsked).toBeGreaterThanOrEqual(2);
      const rows = status.stdout.split('\n').filter((l) => l.startsWith('within-'));
      expect(rows).toHaveLength(18);
      // Each shows its state and rate as the start set them in its search attributes.
      for (const row of rows) expect(row).toMatch(/^within-\d\d\.test\s+running \(last known\)\s+1\s+0\s+0\s+(no worker answered within 10 s: is a crawl worker running on task queue within-test\?|not asked within --within 1 s)$/);
      expect(rows.filter((r) => r.endsWith('not asked within --within 1 s')).length).toBeGreaterThanOrEqual(2);
      // Said at once, from the server's list of the queue's pollers, not only after the queries' wait.
      expect(status.stderr).toContain('crawl: no worker polls task queue within-test: nothing of its sources is crawled until one runs (`crawl worker`, with the same CRAWL_TASK_QUEUE and TEMPORAL_ADDRESS)');
    } finally {
      await Promise.all(sources.map((s) => env.client.workflow.getHandle(monitorWorkflowId(s)).terminate('test over').catch(() => undefined)));
    }
  });

  it('gives up on a dead host as CRAWL_ROBOTS_TRIES says; `crawl run` says why the source waits, and ends by saying why its URLs are not done', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dead-host-'));
    // A port nothing listens on: every connection is refused, robots.txt included.
    const closed = await new Origin().start('127.0.0.9');
    const deadPort = closed.port;
    await closed.stop();
    const manifest = path.join(dataDir, 'manifest.ndjson');
    fs.writeFileSync(manifest, [
      ...[0, 1, 2].map((i) => JSON.stringify({ url: origins[0]!.url(`/dead-host/${i}.jpg`), source: 'live.test' })),
      JSON.stringify({ url: origins[0]!.url('/missing/gone.jpg'), source: 'live.test' }),
      ...[0, 1, 2].map((i) => JSON.stringify({ url: `http://127.0.0.9:${deadPort}/${i}.jpg`, source: 'dead.test' })),
    ].join('\n'));
    const taskQueue = 'dead-host';
    // The worker reads its settings from the environment as it is created.
    const saved = { ...process.env };
    Object.assign(process.env, { CRAWL_ROBOTS_RETRY_S: '10', CRAWL_ROBOTS_TRIES: '2' });
    const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps: defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] }) }).finally(() => { process.env = saved; });
    const run = await worker.runUntil(runCli(['run', manifest, '--out', dataDir], { TEMPORAL_ADDRESS: env.address, CRAWL_TASK_QUEUE: taskQueue, CRAWL_LOG_LEVEL: 'warn' }));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    // While it waited for the second try, the run said which host and why, from the activity
    // through the batch's report and the monitor's status (not a terminal: as a JSON line).
    const notes = run.stdout.split('\n').filter((l) => l.includes('"source_note"')).map((l) => JSON.parse(l) as { source: string; note: string });
    expect(notes).toContainEqual({ event: 'source_note', time: expect.any(String), source: 'dead.test',
      note: expect.stringMatching(new RegExp(`^robots\\.txt unavailable \\(http://127\\.0\\.0\\.9:${deadPort}: robots\\.txt unreachable \\(connect ECONNREFUSED 127\\.0\\.0\\.9:${deadPort}\\) \\(try 1 of 2; its URLs fail after the last\\)\\): asked again at `)) });
    const why = run.stdout.slice(run.stdout.indexOf('not done, by reason'));
    expect(why.split('\n').slice(1, 3)).toEqual([
      `  dead.test: 3 error: robots.txt unreachable (connect ECONNREFUSED 127.0.0.9:${deadPort}); gave up after 2 tries at least 10 s apart`,
      '  live.test: 1 linkrot: http 404',
    ]);
    expect(readRecords(dataDir).map((r) => r.outcome).sort()).toEqual(['done', 'done', 'done', 'error', 'error', 'error', 'linkrot']);
    // The same from the records at any time, for crawls started with `crawl start`.
    const reasons = await runCli(['reasons', 'live.test', 'dead.test', '--data-dir', dataDir, '--top', '1'], {});
    expect([reasons.code, reasons.stdout]).toEqual([0, `${why.split('\n').slice(1, 3).map((l) => l.trim()).join('\n')}\n`]);
    const unknown = await runCli(['reasons', 'nowhere.test', '--data-dir', dataDir], {});
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no records for source "nowhere.test"');
    expect(unknown.stdout).toBe('');
    expect((await runCli(['reasons', '--top', '0', '--data-dir', dataDir], {})).stderr).toMatch(/--top.*must be a whole number from 1 to 100/);
    // As the run's end names its output (`crawl again --out DIR`): before, "unknown option '--out'".
    const fromOut = await runCli(['reasons', 'live.test', 'dead.test', '--out', dataDir, '--top', '1'], {});
    expect([fromOut.code, fromOut.stdout]).toEqual([0, reasons.stdout]);
    const both = await runCli(['reasons', '--out', dataDir, '--data-dir', dataDir], {});
    expect([both.code, both.stderr]).toEqual([1, 'crawl: --data-dir and --out both name the store: give one (--out for a directory `crawl run --out` wrote)\n']);
  });

  it('ends `crawl run` with exit 1 when an operator stopped a source part-way, naming its URLs not crawled; the same command again crawls them', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'stopped-'));
    const manifest = path.join(dataDir, 'manifest.ndjson');
    fs.writeFileSync(manifest, Array.from({ length: 120 }, (_, i) => JSON.stringify({ url: origins[0]!.url(`/stopped-run/${i}.jpg`), source: 'stopped.test' })).join('\n'));
    const catalog = path.join(dataDir, 'catalog.json');
    fs.writeFileSync(catalog, JSON.stringify([{ name: 'stopped.test', rate: 5 }]));
    const taskQueue = 'stopped-run';
    const childEnv = { TEMPORAL_ADDRESS: env.address, CRAWL_TASK_QUEUE: taskQueue, CRAWL_LOG_LEVEL: 'warn' };
    const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps: defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] }) });
    await worker.runUntil(async () => {
      const args = ['run', manifest, '--catalog', catalog, '--out', dataDir];
      const run = runCli(args, childEnv);
      const handle = env.client.workflow.getHandle(monitorWorkflowId('stopped.test'));
      // Some finished (its first grant reported, ~8 s), most not: 120 URLs at 5/s take 24 s.
      for (let finished = 0; finished === 0;) {
        await new Promise((r) => setTimeout(r, 500));
        finished = await handle.query(statsQuery).then((st) => st.urls.finished, () => 0);
      }
      const stop = await runCli(['stop', 'stopped.test'], childEnv);
      expect([stop.code, stop.stderr]).toEqual([0, '']);
      const first = await run;
      const final = (await handle.result()) as MonitorStats;
      const left = final.urls.total - final.urls.finished;
      expect(left).toBeGreaterThan(0);
      // `crawl stop` says so too, from the monitor's result.
      expect(stop.stdout).toBe(`stopped.test: stopped (${120 - left} of its 120 URLs finished; the other ${left} have no record: starting its manifest again, or \`crawl run\` of it, crawls them)\n`);
      expect(first.code).toBe(1);
      expect(first.stdout).toContain(`STOPPED stopped.test: stopped by an operator with ${left} of its 120 URL(s) not crawled (no record yet); run this command again to crawl them.\n`);
      expect(readRecords(dataDir)).toHaveLength(120 - left);
      // The rest faster: a changed catalogue entry reaches the new monitor.
      fs.writeFileSync(catalog, JSON.stringify([{ name: 'stopped.test', rate: 20 }]));
      const second = await runCli(args, childEnv);
      expect([second.code, second.stdout]).toEqual([0, expect.not.stringContaining('STOPPED')]);
      expect(readRecords(dataDir).map((r) => r.url).sort()).toEqual(Array.from({ length: 120 }, (_, i) => origins[0]!.url(`/stopped-run/${i}.jpg`)).sort());
    });
  });

  it('ends `crawl run` with a source halted behind a wall: exit 1, its URLs kept, and the last monitoring_update shows it halted; `crawl again` resumes it, and asks for the walled URLs once the wall is gone', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wall-'));
    let walled = true;
    // A cookie wall this client never passes: every image URL redirects to itself for ever.
    // Once it is gone, each image URL redirects to an image.
    const wall = await new Origin().route('*', (q, r) => {
      if (q.url === '/robots.txt') { r.writeHead(404); r.end(); return; }
      if (walled) r.writeHead(302, { location: q.url!, 'set-cookie': `visit=${Math.random()}; Path=/` });
      else r.writeHead(302, { location: origins[0]!.url(`/after-wall${q.url}`) });
      r.end();
    }).start('127.0.0.5');
    try {
      const manifest = path.join(dataDir, 'manifest.ndjson');
      const catalog = path.join(dataDir, 'catalog.ndjson');
      fs.writeFileSync(manifest, [
        ...Array.from({ length: 120 }, (_, i) => JSON.stringify({ url: wall.url(`/img/${i}.jpg`), source: 'wall.test' })),
        ...[0, 1].map((i) => JSON.stringify({ url: origins[0]!.url(`/beside-wall/${i}.jpg`), source: 'live.test' })),
      ].join('\n'));
      fs.writeFileSync(catalog, `${JSON.stringify({ name: 'wall.test', rate: 50 })}\n`);
      const taskQueue = 'wall';
      const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps: defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] }) });
      const run = await worker.runUntil(runCli(['run', manifest, '--catalog', catalog, '--out', dataDir], { TEMPORAL_ADDRESS: env.address, CRAWL_TASK_QUEUE: taskQueue, CRAWL_LOG_LEVEL: 'warn' }));
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/^HALTED wall\.test: its first 50 answers were not images but .*endless redirects.*\(the last: more than 5 redirects\).*cookie wall/m);
      const updates = run.stdout.split('\n').filter((l) => l.startsWith('{"event":"monitoring_update"')).map((l) => JSON.parse(l) as { global: { halted: number; running: number } });
      expect(updates.at(-1)!.global).toMatchObject({ halted: 1 });
      // Fifty chains (and what the grants already out had begun), not 120: the rest are kept.
      const finished = readRecords(dataDir).filter((r) => r.source === 'wall.test');
      expect(finished.length).toBeGreaterThanOrEqual(50);
      expect(finished.length).toBeLessThan(120);
      expect(finished.every((r) => r.outcome === 'content' && r.reason === 'more than 5 redirects')).toBe(true);
      expect(run.stdout).toContain(`for the ${finished.length} URL(s) a wall answered (pages, empty bodies, endless redirects, 4xx refusals), once the site lets the crawler through: \`crawl again --out ${dataDir}\``);

      const childEnv = { TEMPORAL_ADDRESS: env.address, CRAWL_TASK_QUEUE: taskQueue, CRAWL_LOG_LEVEL: 'warn' };
      // A worker runs once: another for the operator's steps.
      const worker2 = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps: defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] }) });
      let walledUrls = 0;
      const again = await worker2.runUntil(async () => {
        // Asked again too soon, while the wall stands: the halted source is resumed, and halts again.
        const tooSoon = await runCli(['again', '--out', dataDir], childEnv);
        expect(tooSoon.code).toBe(1);
        expect(tooSoon.stdout).toMatch(/^ {2}wall\.test: halted by an earlier run \(its first 50 answers were not images.*\); resumed$/m);
        expect(tooSoon.stdout).toMatch(/^HALTED wall\.test: /m);
        walledUrls = new Set(readRecords(dataDir).filter((r) => r.source === 'wall.test').map((r) => r.url)).size;
        expect(walledUrls).toBeGreaterThanOrEqual(finished.length + 50);
        // The operator ends the halted crawl, the site lets the crawler through, and the walled URLs are asked for again.
        expect((await runCli(['stop', 'wall.test'], childEnv)).code).toBe(0);
        walled = false;
        // Without --catalog: the rate the run was given is kept in the store.
        return runCli(['again', '--out', dataDir], childEnv);
      });
      expect(again.stdout).toMatch(new RegExp(`^asking again for ${walledUrls} URL\\(s\\), listed in .*again-\\d{8}T\\d{6}Z\\.ndjson: wall\\.test: ${walledUrls} walled$`, 'm'));
      expect(again.stdout).toContain(`as the earlier crawls into the local directory ${path.join(dataDir, 'store')} were told (work/run-settings.json): wall.test: rate 50/s\n`);
      // The taken-up chunk's walled records are the stopped crawl's, not answers to this one: no
      // "no image yet" news, and no hint to run the command that is running its second round.
      expect(again.stdout).not.toContain('no image yet');
      expect(again.stdout).not.toContain('to ask again');
      expect(again.stdout).not.toContain('not done, by reason');
      // The stopped crawl's unfinished chunks held them: this run finished those (the URLs kept), then asked for the walled ones.
      expect(again.stdout).toMatch(new RegExp(`^${walledUrls} of them were held by an earlier crawl's unfinished chunks, which this run has finished`, 'm'));
      expect(again.code).toBe(0);
      // One record per URL in metadata.ndjson, each an image now: the walled URLs asked again, and
      // the URLs the stopped crawl had kept, which a later start for the source takes up.
      const records = fs.readFileSync(path.join(dataDir, 'metadata.ndjson'), 'utf8').split('\n').filter(Boolean)
        .map((l) => JSON.parse(l) as { url: string; source: string; outcome: string }).filter((r) => r.source === 'wall.test');
      expect(records.map((r) => r.url).sort()).toEqual(Array.from({ length: 120 }, (_, i) => wall.url(`/img/${i}.jpg`)).sort());
      expect(records.filter((r) => r.outcome !== 'done')).toEqual([]);
      const nothing = await runCli(['again', '--out', dataDir], childEnv);
      expect([nothing.code, nothing.stdout]).toEqual([0, expect.stringMatching(/^nothing to ask again: none of the \d+ record\(s\) in the local directory .* is a wall's answer/)]);
    } finally {
      await wall.stop();
    }
  });

  it('holds every source under the global ceiling (--max-rate), over its catalogue rate and a later set-rate', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'max-rate-'));
    const o = origins[2]!;
    const source = 'ceiling.test';
    const manifest = path.join(dataDir, 'manifest.ndjson');
    fs.writeFileSync(manifest, Array.from({ length: 6 }, (_, i) => JSON.stringify({ url: o.url(`/max-rate/${i}.jpg`), source })).join('\n'));
    const taskQueue = 'max-rate';
    const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps: defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] }) });
    await worker.runUntil(async () => {
      await startCrawl({ client: env.client, store: new LocalStore(path.join(dataDir, 'store')), manifest, catalog: new Map([[source, { rate: 20 }]]), taskQueue, maxRate: 2 });
      const handle = env.client.workflow.getHandle(monitorWorkflowId(source));
      expect(await handle.query(statsQuery)).toMatchObject({ target: 2, maxRate: 2 });
      const reply = await runCli(['set-rate', source, '30'], { TEMPORAL_ADDRESS: env.address });
      expect(reply.stdout).toContain('target 2/s (capped by the global ceiling of 2/s)');
      expect((await runCli(['resume', source, '--rate', '40'], { TEMPORAL_ADDRESS: env.address })).stdout)
        .toContain(`${source}: running, target 2/s (capped by the global ceiling of 2/s)`);
      expect(((await handle.result()) as MonitorStats).urls.finished).toBe(6);
    });
    // At the catalogue's 20/s the six requests would have taken a quarter of a second.
    const sent = o.hits('/max-rate/').map((r) => r.atMs);
    expect(sent).toHaveLength(6);
    expect(Math.max(...sent) - Math.min(...sent)).toBeGreaterThanOrEqual(2_000);
    // A bad ceiling in the environment is reported before anything starts.
    const bad = await runCli(['start', manifest], { TEMPORAL_ADDRESS: '127.0.0.1:1', CRAWL_MAX_RATE: 'fast' });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/CRAWL_MAX_RATE: rate must be a finite number of requests per second, got "fast"/);
  });

  it('honours a Retry-After only up to --max-retry-after, on the monitor and on the worker', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'retry-cap-'));
    const body = await jpeg(60, 40);
    let answered429 = false;
    const site = await new Origin().route('*', (req, res) => {
      if (req.url === '/robots.txt') { res.writeHead(404); res.end(); return; }
      // The first image request: come back in an hour.
      if (!answered429) { answered429 = true; res.writeHead(429, { 'retry-after': '3600' }); res.end(); return; }
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
      res.end(body);
    }).start('127.0.0.5');
    try {
      const source = 'retry-cap.test';
      const manifest = path.join(dataDir, 'manifest.ndjson');
      fs.writeFileSync(manifest, Array.from({ length: 4 }, (_, i) => JSON.stringify({ url: site.url(`/cap/${i}.jpg`), source })).join('\n'));
      const taskQueue = 'retry-cap';
      const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps: defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] }) });
      await worker.runUntil(async () => {
        await startCrawl({ client: env.client, store: new LocalStore(path.join(dataDir, 'store')), manifest, catalog: new Map([[source, { rate: 4 }]]), taskQueue, maxRetryAfterMs: 3_000 });
        const stats = (await env.client.workflow.getHandle(monitorWorkflowId(source)).result()) as MonitorStats;
        expect(stats.urls.finished).toBe(4);
        expect(stats.counts.done).toBe(4);
      });
      const sent = site.hits('/cap/').map((r) => r.atMs);
      expect(sent).toHaveLength(5); // the 429, then each image once
      // Held for the cap (3 s), not the hour the site asked for.
      expect(sent[1]! - sent[0]!).toBeGreaterThanOrEqual(3_000);
      expect(sent[1]! - sent[0]!).toBeLessThan(30_000);
    } finally {
      await site.stop();
    }
    const bad = await runCli(['start', path.join(dataDir, 'manifest.ndjson'), '--max-retry-after', '0'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/the longest Retry-After must be a number of seconds from 1 to 86400/);
    const badEnv = await runCli(['start', path.join(dataDir, 'manifest.ndjson')], { TEMPORAL_ADDRESS: '127.0.0.1:1', CRAWL_MAX_RETRY_AFTER_S: 'soon' });
    expect(badEnv.code).toBe(1);
    expect(badEnv.stderr).toMatch(/CRAWL_MAX_RETRY_AFTER_S: the longest Retry-After must be/);
  });

  it('slows a source to the Crawl-delay its robots.txt asks for, over its catalogue rate and a later set-rate', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawl-delay-'));
    const body = await jpeg(60, 40);
    const site = await new Origin().route('*', (req, res) => {
      if (req.url === '/robots.txt') { res.writeHead(200, { 'content-type': 'text/plain' }); res.end('User-agent: *\nCrawl-delay: 1\n'); return; }
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
      res.end(body);
    }).start('127.0.0.5');
    try {
      const source = 'delay.test';
      const manifest = path.join(dataDir, 'manifest.ndjson');
      // More than one window's worth at the delay: the first grant goes on at the site's pace
      // and reports the delay at its end, and the crawl is still on for the set-rate.
      fs.writeFileSync(manifest, Array.from({ length: 20 }, (_, i) => JSON.stringify({ url: site.url(`/delay/${i}.jpg`), source })).join('\n'));
      const taskQueue = 'crawl-delay';
      const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps: defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] }) });
      await worker.runUntil(async () => {
        await startCrawl({ client: env.client, store: new LocalStore(path.join(dataDir, 'store')), manifest, catalog: new Map([[source, { rate: 10, burst: 2 }]]), taskQueue });
        const handle = env.client.workflow.getHandle(monitorWorkflowId(source));
        const deadline = Date.now() + 30_000;
        while (((await handle.query(statsQuery)) as MonitorStats).siteMaxRate === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
        expect(await handle.query(statsQuery)).toMatchObject({ target: 1, burst: 0, siteMaxRate: 1 });
        const reply = await runCli(['set-rate', source, '30'], { TEMPORAL_ADDRESS: env.address });
        expect(reply.stdout).toContain('target 1/s (capped by the site\'s robots.txt Crawl-delay)');
        expect(((await handle.result()) as MonitorStats).urls.finished).toBe(20);
      });
      // At the catalogue's 10/s and burst 2 the images would have come 100 ms apart or closer.
      // robots.txt first: the delay holds between it and the first image too.
      const sent = site.requests.map((r) => r.atMs).sort((x, y) => x - y);
      expect(site.requests.map((r) => r.path).filter((p) => p === '/robots.txt')).toHaveLength(1);
      expect(sent).toHaveLength(21);
      for (let i = 1; i < sent.length; i++) expect(sent[i]! - sent[i - 1]!).toBeGreaterThanOrEqual(800);
    } finally {
      await site.stop();
    }
  });

  it('crawls a source spanning hosts whose first chunk is all on a host with a Crawl-delay: that host at its delay, then the others at the source\'s rate', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawl-delay-span-'));
    const body = await jpeg(60, 40);
    const site = (robots: string) => (req: { url?: string }, res: import('node:http').ServerResponse) => {
      if (req.url === '/robots.txt') { res.writeHead(200, { 'content-type': 'text/plain' }); res.end(robots); return; }
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
      res.end(body);
    };
    const slow = await new Origin().route('*', site('User-agent: *\nCrawl-delay: 1\n')).start('127.0.0.6');
    const fast = await new Origin().route('*', site('User-agent: *\nAllow: /\n')).start('127.0.0.7');
    try {
      const source = 'span.test';
      const manifest = path.join(dataDir, 'manifest.ndjson');
      const lines = [
        ...Array.from({ length: 12 }, (_, i) => JSON.stringify({ url: slow.url(`/slow/${i}.jpg`), source })),
        ...Array.from({ length: 60 }, (_, i) => JSON.stringify({ url: fast.url(`/fast/${i}.jpg`), source })),
      ];
      fs.writeFileSync(manifest, lines.join('\n'));
      const taskQueue = 'crawl-delay-span';
      const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps: defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] }) });
      let stats: MonitorStats | undefined;
      await worker.runUntil(async () => {
        // Chunks of 12: the first is all the delayed host's URLs, the other five the other host's.
        await startCrawl({ client: env.client, store: new LocalStore(path.join(dataDir, 'store')), manifest, catalog: new Map([[source, { rate: 10 }]]), taskQueue, chunkSize: 12 });
        stats = (await env.client.workflow.getHandle(monitorWorkflowId(source)).result()) as MonitorStats;
      });
      expect(stats!.urls.finished).toBe(72);
      const records = readRecords(dataDir);
      expect(records.filter((r) => r.outcome === 'done')).toHaveLength(72);
      // The delayed host's requests (robots.txt included) a delay apart, give or take this
      // process's event loop, which logs them.
      const slowAt = slow.requests.map((r) => r.atMs).sort((x, y) => x - y);
      expect(slowAt).toHaveLength(13);
      for (let i = 1; i < slowAt.length; i++) expect(slowAt[i]! - slowAt[i - 1]!).toBeGreaterThanOrEqual(900);
      // Then the cap went: the other host's URLs left after the delayed host's chunk came at the
      // source's rate (26 s in all; capped for good, 70 s), and no faster.
      const fastAt = fast.requests.filter((r) => r.path !== '/robots.txt').map((r) => r.atMs).sort((x, y) => x - y);
      expect(fastAt).toHaveLength(60);
      expect(stats!.siteMaxRate).toBeNull();
      expect(Math.max(...fastAt, ...slowAt) - Math.min(...slowAt)).toBeLessThan(50_000);
      expect(maxInAnyWindow(fastAt, 1_000)).toBeLessThanOrEqual(ceilings(10, 0).perSecond);
    } finally {
      await slow.stop();
      await fast.stop();
    }
  });

  it('pauses and resumes several sources or --all at once, each answered on its own line, and names a monitor no worker serves', async () => {
    const taskQueue = 'operator-many';
    const start = (source: string, queue: string) => env.client.workflow.start(crawlMonitorWorkflow, {
      taskQueue: queue, workflowId: monitorWorkflowId(source), args: [{ source, config: { rate: 1 }, options: { finishWhenDrained: false } }],
    });
    const handles = [await start('many-a.test', taskQueue), await start('many-b.test', taskQueue), await start('unserved.test', 'nobody-home')];
    const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps: defaultDeps({ dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'many-')) }) });
    try {
      await worker.runUntil(async () => {
        const childEnv = { TEMPORAL_ADDRESS: env.address };
        const none = await runCli(['pause'], childEnv);
        expect(none.code).toBe(1);
        expect(none.stderr).toMatch(/name at least one source \(`crawl status` lists them\), or use --all/);
        const mixed = await runCli(['pause', 'many-a.test', 'no-such-source', 'many-b.test'], childEnv);
        expect(mixed.code).toBe(1);
        expect(mixed.stdout.split('\n').filter(Boolean).sort()).toEqual(['many-a.test: paused', 'many-b.test: paused']);
        expect(mixed.stderr).toMatch(/no crawl monitor for source "no-such-source"/);
        // A name that is almost one of them is answered with it.
        const almost = await runCli(['pause', 'Many-A.test'], childEnv);
        expect(almost.code).toBe(1);
        expect(almost.stderr).toMatch(/no crawl monitor for source "Many-A\.test" .*Did you mean "many-a\.test"\?/);
        // No worker on its task queue: the command says so instead of waiting for ever.
        const unserved = await runCli(['pause', 'unserved.test'], childEnv);
        expect(unserved.code).toBe(1);
        expect(unserved.stderr).toMatch(/unserved\.test: no worker answered within 15 s: is a crawl worker running on task queue nobody-home\?/);
        // --all reaches every running monitor (others from earlier tests included).
        const all = await runCli(['resume', '--all'], childEnv);
        expect(all.stdout).toContain('many-a.test: running');
        expect(all.stdout).toContain('many-b.test: running');
        expect(all.stderr).toMatch(/unserved\.test: no worker answered/);
        expect((await runCli(['stop', 'many-a.test', 'many-b.test'], childEnv)).code).toBe(0);
      });
    } finally {
      await handles[2]!.terminate('test over');
    }
  });

  it('lets an operator pause, re-rate, query and resume a monitor through the CLI', async () => {
    const taskQueue = 'operator';
    const handle = await env.client.workflow.start(crawlMonitorWorkflow, {
      taskQueue, workflowId: monitorWorkflowId('operator.test'),
      args: [{ source: 'operator.test', config: { rate: 1 }, options: { finishWhenDrained: false } }],
    });
    const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps: defaultDeps({ dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'op-')) }) });
    await worker.runUntil(async () => {
      const childEnv = { TEMPORAL_ADDRESS: env.address };
      expect((await runCli(['pause', 'operator.test'], childEnv)).stdout).toContain('operator.test: paused');
      expect((await runCli(['set-rate', 'operator.test', '7', '--burst', '1'], childEnv)).stdout).toContain('target 7/s');
      const status = await runCli(['status', 'operator.test', '--json'], childEnv);
      const parsed = JSON.parse(status.stdout);
      expect(parsed.sources[0].stats).toMatchObject({ state: 'paused', target: 7, burst: 1 });
      // The worker serving it, as the server saw it poll (this process: `<pid>@<host>`).
      expect(parsed.workers).toEqual({ operator: [{ identity: expect.stringMatching(new RegExp(`^${process.pid}@`)), lastSeenS: expect.any(Number) }] });
      const table = await runCli(['status', 'operator.test'], childEnv);
      expect(table.stdout).toMatch(new RegExp(`^1 worker\\(s\\) poll task queue operator: ${process.pid}@`, 'm'));
      expect(table.stderr).not.toContain('no worker polls');
      expect((await runCli(['resume', 'operator.test', '--rate', '3'], childEnv)).stdout).toContain('running');
      expect((await runCli(['stop', 'operator.test'], childEnv)).stdout).toContain('operator.test: stopped\n');
      // Returned once the monitor has completed: a start that follows begins a new crawl.
      expect((await handle.describe()).status.name).toBe('COMPLETED');
      expect((await handle.result()).state).toBe('stopped');
    });
  });
});
