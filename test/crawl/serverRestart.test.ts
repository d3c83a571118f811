import { spawn } from 'node:child_process';
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
import { monitorWorkflowId } from '../../src/workflows/monitorState';
import type { MonitorStats } from '../../src/workflows/monitorStats';
import { crawlMonitorWorkflow } from '../../src/workflows/monitor';
import { jpeg } from '../support/images';
import { readRecords } from '../support/records';

const CLI = path.resolve(__dirname, '..', '..', 'bin', 'crawl');

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

  /** Waits (up to a minute) until the origin has been asked for `count` paths under `prefix`. */
  const originSaw = async (prefix: string, count: number) => {
    const deadline = Date.now() + 60_000;
    while (origin.hits(prefix).length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(origin.hits(prefix).length).toBeGreaterThanOrEqual(count);
  };

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
      await originSaw('/r/', 8);
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

  it('a `crawl worker` rides out its server gone for 20 s: a line each way in its log, the crawl finished, no URL asked twice', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outage-'));
    const serverDir = path.join(dataDir, 'temporal');
    const [port, uiPort] = [await freePort(), await freePort()];
    const source = `127.0.0.5:${origin.port}`;
    const urls = Array.from({ length: 60 }, (_, i) => origin.url(`/gone/${i}.jpg`));
    const manifest = path.join(dataDir, 'manifest.txt');
    fs.writeFileSync(manifest, urls.join('\n'));
    let server = await ensureTemporalServer({ dataDir: serverDir, port, uiPort, ifPortTaken: 'another' });
    const healthPort = await freePort();
    const env = {
      ...process.env, TEMPORAL_ADDRESS: server.address, CRAWL_DATA_DIR: dataDir, CRAWL_ALLOW_NETWORKS: '127.0.0.0/8', CRAWL_TASK_QUEUE: 'outage-test',
      CRAWL_HEALTH_ADDRESS: `127.0.0.1:${healthPort}`,
    };
    const worker = spawn(process.execPath, [CLI, 'worker'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    worker.stderr.on('data', (d) => { log += d; });
    /** The worker's health check at `path` (CRAWL_HEALTH_ADDRESS), once it says `status`. */
    const healthSays = async (path: string, status: number, withinMs = 30_000): Promise<{ status: string; reasons?: string[] }> => {
      const deadline = Date.now() + withinMs;
      for (;;) {
        const res = await fetch(`http://127.0.0.1:${healthPort}${path}`).catch(() => undefined);
        if (res?.status === status) return (await res.json()) as { status: string; reasons?: string[] };
        if (Date.now() > deadline) throw new Error(`${path} never answered ${status} (last: ${res?.status ?? 'no answer'})\n${log.slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    };
    try {
      expect(await healthSays('/readyz', 200)).toMatchObject({ status: 'ok' });
      const client = await connectClient(server.address);
      await ensureSearchAttributes(client);
      await startCrawl({ client, store: new LocalStore(path.join(dataDir, 'store')), manifest, catalog: new Map([[source, { rate: 4 }]]), taskQueue: 'outage-test' });
      await client.connection.close();
      await originSaw('/gone/', 6);
      // Gone as in a crash: the server's process killed, its SQLite file kept.
      const { pid } = JSON.parse(fs.readFileSync(path.join(serverDir, 'server.json'), 'utf8')) as { pid: number };
      process.kill(pid, 'SIGKILL');
      await server.exited;
      // Not ready while its server is away, saying why; alive all along (a restart would not help).
      const away = await healthSays('/readyz', 503, 15_000);
      expect(away.reasons).toEqual([expect.stringMatching(/^cannot reach the Temporal server for \d+ s \(Unavailable: .*\); the worker keeps trying$/)]);
      expect((await fetch(`http://127.0.0.1:${healthPort}/healthz`)).status).toBe(200);
      // Longer than the SDK tries to send a finished fetch's result: such a result is lost, and
      // the fetch's retry takes up the records it stored instead of asking the site again.
      await new Promise((r) => setTimeout(r, 20_000));
      // On the port the worker knows.
      server = await ensureTemporalServer({ dataDir: serverDir, port: Number(server.address.split(':').pop()), uiPort });
      const again = await connectClient(server.address);
      const stats = (await again.workflow.getHandle(monitorWorkflowId(source)).result()) as MonitorStats;
      await again.connection.close();
      expect(stats.urls).toMatchObject({ total: 60, finished: 60 });
      const records = readRecords(dataDir);
      expect(records).toHaveLength(60);
      expect(new Set(records.map((r) => r.url))).toEqual(new Set(urls));
      const perUrl = new Map<string, number>();
      for (const r of origin.hits('/gone/')) perUrl.set(r.path, (perUrl.get(r.path) ?? 0) + 1);
      expect(Math.max(...perUrl.values())).toBe(1);
      const deadline = Date.now() + 15_000;
      while (!log.includes('"temporal.reachable"') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      expect(await healthSays('/readyz', 200)).toMatchObject({ status: 'ok', temporalServer: { reachable: true } });
      const lines = log.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { event?: string; msg?: string; downForS?: number });
      // Once each way (a server still starting may refuse a call after its first answer: then
      // twice), the last saying it is back, after as long as it was gone.
      const said = lines.filter((l) => l.event === 'temporal.unreachable' || l.event === 'temporal.reachable');
      expect(said.length).toBeGreaterThanOrEqual(2);
      expect(said.length).toBeLessThanOrEqual(4);
      expect(said[0]!.event).toBe('temporal.unreachable');
      expect(said.at(-1)!.event).toBe('temporal.reachable');
      expect(said.reduce((sum, l) => sum + (l.downForS ?? 0), 0)).toBeGreaterThanOrEqual(15);
      // The SDK's retries of every call are left out (before: about two lines a second, later at ERROR).
      expect(lines.filter((l) => /retried \d+ times/.test(l.msg ?? ''))).toEqual([]);
    } finally {
      worker.kill('SIGKILL');
      await server.stop();
    }
  }, 180_000);

  it('`crawl run` against TEMPORAL_ADDRESS waits for its server gone for a minute, says so, and ends with its summary', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'run-outage-'));
    const out = path.join(dir, 'out');
    const [port, uiPort] = [await freePort(), await freePort()];
    const urls = Array.from({ length: 40 }, (_, i) => origin.url(`/run-outage/${i}.jpg`));
    fs.writeFileSync(path.join(dir, 'm.txt'), urls.join('\n'));
    fs.writeFileSync(path.join(dir, 'catalog.json'), JSON.stringify([{ name: `127.0.0.5:${origin.port}`, rate: 1 }]));
    let server = await ensureTemporalServer({ dataDir: path.join(dir, 'temporal'), port, uiPort, ifPortTaken: 'another' });
    const env = { ...process.env, TEMPORAL_ADDRESS: server.address, CRAWL_TASK_QUEUE: 'run-outage-test', CRAWL_LOG_LEVEL: 'error' };
    const worker = spawn(process.execPath, [CLI, 'worker', '--allow-network', '127.0.0.0/8'], { env: { ...env, CRAWL_DATA_DIR: out }, stdio: 'ignore' });
    const run = spawn(process.execPath, [CLI, 'run', path.join(dir, 'm.txt'), '--catalog', path.join(dir, 'catalog.json'), '--out', out, '--allow-network', '127.0.0.0/8'],
      { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    run.stdout.on('data', (d) => { stdout += d; });
    run.stderr.on('data', (d) => { stderr += d; });
    const ended = new Promise<number | null>((resolve) => run.once('exit', resolve));
    try {
      await originSaw('/run-outage/', 3);
      const { pid } = JSON.parse(fs.readFileSync(path.join(dir, 'temporal', 'server.json'), 'utf8')) as { pid: number };
      process.kill(pid, 'SIGKILL');
      await server.exited;
      await new Promise((r) => setTimeout(r, 60_000));
      server = await ensureTemporalServer({ dataDir: path.join(dir, 'temporal'), port: Number(server.address.split(':').pop()), uiPort });
      // Before, the run ended during the outage: `crawl: Failed to describe workflow: 14 UNAVAILABLE ...`, exit code 1.
      expect({ code: await ended, stderr }).toMatchObject({ code: 0 });
      const events = stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { event: string; note?: string });
      const said = events.filter((e) => e.event === 'temporal_unreachable' || e.event === 'temporal_reachable').map((e) => e.event);
      expect(said).toEqual(['temporal_unreachable', 'temporal_reachable']);
      expect(stdout).toMatch(/metadata: .*metadata\.ndjson \(40 records\)/);
      expect(new Set(readRecords(out).map((r) => r.url))).toEqual(new Set(urls));
    } finally {
      run.kill('SIGKILL');
      worker.kill('SIGKILL');
      await server.stop();
    }
  }, 240_000);

  it('`crawl status --watch` outlives its server gone for a while: says so, and goes on when it is back', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'watch-outage-'));
    const [port, uiPort] = [await freePort(), await freePort()];
    let server = await ensureTemporalServer({ dataDir: path.join(dir, 'temporal'), port, uiPort, ifPortTaken: 'another' });
    const client = await connectClient(server.address);
    await ensureSearchAttributes(client);
    // A monitor with nothing to do, answered by a worker in this process.
    const connection = await connectWorker(server.address);
    const worker = await createCrawlWorker({ connection, taskQueue: 'watch-outage', deps: defaultDeps({ dataDir: dir, allowNetworks: ['127.0.0.0/8'] }) });
    const running = worker.run();
    await client.workflow.start(crawlMonitorWorkflow, {
      taskQueue: 'watch-outage', workflowId: monitorWorkflowId('watch-outage.test'),
      args: [{ source: 'watch-outage.test', config: { rate: 1 }, options: { finishWhenDrained: false } }],
    });
    await client.connection.close();
    const watch = spawn(process.execPath, [CLI, 'status', '--watch', '--interval', '1'], { env: { ...process.env, TEMPORAL_ADDRESS: server.address }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    watch.stdout.on('data', (d) => { stdout += d; });
    watch.stderr.on('data', (d) => { stderr += d; });
    let exited: number | null | undefined;
    watch.once('exit', (code) => { exited = code; });
    const events = () => stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { event: string }).event);
    const until = async (ok: () => boolean, ms: number) => {
      const deadline = Date.now() + ms;
      while (!ok() && exited === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    };
    try {
      await until(() => events().includes('monitoring_update'), 30_000);
      // Each line counts the workers polling the running monitors' queues: this process's one.
      const first = JSON.parse(stdout.split('\n').find((l) => l.startsWith('{"event":"monitoring_update"'))!) as { workers?: Record<string, number> };
      expect(first.workers).toEqual({ 'watch-outage': 1 });
      expect(stderr).not.toMatch(/worker/);
      const { pid } = JSON.parse(fs.readFileSync(path.join(dir, 'temporal', 'server.json'), 'utf8')) as { pid: number };
      process.kill(pid, 'SIGKILL');
      await server.exited;
      // Before, the watch ended here: `crawl: Failed to describe workflow: 14 UNAVAILABLE ...`.
      await until(() => events().includes('temporal_unreachable'), 60_000);
      expect({ exited, stderr, events: events().filter((e) => e !== 'monitoring_update') }).toMatchObject({ exited: undefined, events: ['temporal_unreachable'] });
      server = await ensureTemporalServer({ dataDir: path.join(dir, 'temporal'), port: Number(server.address.split(':').pop()), uiPort });
      await until(() => events().lastIndexOf('monitoring_update') > events().indexOf('temporal_reachable') && events().includes('temporal_reachable'), 60_000);
      expect(events().filter((e) => e !== 'monitoring_update')).toEqual(['temporal_unreachable', 'temporal_reachable']);
      expect(events().lastIndexOf('monitoring_update')).toBeGreaterThan(events().indexOf('temporal_reachable'));
      expect(exited).toBeUndefined();
    } finally {
      watch.kill('SIGKILL');
      // The server may be down still (the test failed before starting it again): start it, so
      // that the worker and the monitor can be ended in order.
      if (!(await portOpen('127.0.0.1', Number(server.address.split(':').pop())))) {
        server = await ensureTemporalServer({ dataDir: path.join(dir, 'temporal'), port: Number(server.address.split(':').pop()), uiPort });
      }
      const again = await connectClient(server.address);
      await again.workflow.getHandle(monitorWorkflowId('watch-outage.test')).terminate('test over').catch(() => undefined);
      await again.connection.close();
      worker.shutdown();
      await running.catch(() => undefined);
      await connection.close();
      await server.stop();
    }
  }, 240_000);

  /** `crawl run` of `count` URLs under /`name`/ at 4/s in a new directory, as a child process. */
  const runCommand = (name: string, count: number) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`));
    const urls = Array.from({ length: count }, (_, i) => origin.url(`/${name}/${i}.jpg`));
    const manifest = path.join(dataDir, 'manifest.txt');
    fs.writeFileSync(manifest, urls.join('\n'));
    const catalog = path.join(dataDir, 'catalog.json');
    fs.writeFileSync(catalog, JSON.stringify([{ name: `127.0.0.5:${origin.port}`, rate: 4 }]));
    const out = path.join(dataDir, 'out');
    const run = () => {
      const child = spawn(process.execPath, [CLI, 'run', manifest, '--catalog', catalog, '--out', out, '--allow-network', '127.0.0.0/8'], { env: { ...process.env, CRAWL_LOG_LEVEL: 'error' }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      let stdout = '';
      child.stderr.on('data', (d) => { stderr += d; });
      child.stdout.on('data', (d) => { stdout += d; });
      const exited = new Promise<{ code: number | null; ms: number }>((resolve) => child.once('exit', (code) => resolve({ code, ms: Date.now() })));
      return { child, exited, stderr: () => stderr, stdout: () => stdout };
    };
    const serverMarker = () => JSON.parse(fs.readFileSync(path.join(out, 'temporal', 'server.json'), 'utf8')) as { pid: number; ownerPid: number };
    /** The same command again finishes the crawl: one `done` record per URL. */
    const finishes = async () => {
      const again = run();
      const ended = await again.exited;
      expect({ code: ended.code, stderr: again.stderr() }).toMatchObject({ code: 0 });
      const records = readRecords(out);
      expect(records).toHaveLength(count);
      expect(new Set(records.map((r) => r.url))).toEqual(new Set(urls));
      expect(records.every((r) => r.outcome === 'done')).toBe(true);
    };
    return { run, serverMarker, finishes };
  };

  it('stops `crawl run` with a clear error when its embedded server dies, and the same command finishes the crawl', async () => {
    const { run, serverMarker, finishes } = runCommand('dies', 30);
    const first = run();
    try {
      await originSaw('/dies/', 5);
      const { pid } = serverMarker();
      const killedAt = Date.now();
      process.kill(pid, 'SIGKILL');
      const ended = await first.exited;
      // Before, it ended ~31 s later without a word about why (a Ctrl-C meanwhile was not
      // enough: its worker kept retrying the dead server). Now the worker gets 10 s to stop.
      expect(ended.ms - killedAt).toBeLessThan(20_000);
      expect(ended.code).toBe(1);
      expect(first.stderr()).toMatch(/crawl: the embedded Temporal server was killed by SIGKILL \(its log: .*temporal-server\.log\)\. Nothing is lost: run the same command again to continue where this run stopped\./);
      // Logs are JSON lines on stderr, the SDK core's too (it retries the dead server for seconds,
      // and printed that to stdout as coloured text among the monitoring_update lines).
      const isJsonObject = (line: string) => { try { return typeof JSON.parse(line) === 'object'; } catch { return false; } };
      expect(first.stderr().split('\n').filter((l) => l && !l.startsWith('crawl: ') && !isJsonObject(l))).toEqual([]);
      expect(first.stdout().split('\n').filter((l) => l.includes('\x1b[') || l.includes('temporalio_') || l.includes('"level"'))).toEqual([]);
    } finally {
      first.child.kill('SIGKILL');
    }
    await finishes();
  });

  it('also stops with a clear error when a server it took over from a killed run dies', async () => {
    const { run, serverMarker, finishes } = runCommand('orphan', 60);
    const first = run();
    try {
      await originSaw('/orphan/', 3);
    } finally {
      first.child.kill('SIGKILL'); // its server lives on, as after an OOM kill of the run
    }
    await first.exited;
    const second = run();
    try {
      const deadline = Date.now() + 30_000;
      while (serverMarker().ownerPid !== second.child.pid && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(serverMarker().ownerPid).toBe(second.child.pid);
      await new Promise((r) => setTimeout(r, 2000)); // its worker is polling
      const killedAt = Date.now();
      process.kill(serverMarker().pid, 'SIGKILL');
      const ended = await second.exited;
      // Before, a taken-over server was not watched: the run went on for ~30 s without a word.
      expect(ended.ms - killedAt).toBeLessThan(20_000);
      expect(ended.code).toBe(1);
      expect(second.stderr()).toMatch(/crawl: the embedded Temporal server is no longer running \(taken over from an earlier run, so how it ended is not known; its log: .*temporal-server\.log\)\. Nothing is lost/);
    } finally {
      second.child.kill('SIGKILL');
    }
    await finishes();
  });
});
