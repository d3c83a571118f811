import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startCrawl } from '../../src/crawl/start';
import { Origin } from '../../src/demo/origin';
import { LocalStore } from '../../src/pipeline/store';
import { ceilings, maxInAnyWindow } from '../../src/politeness/pacing';
import { createCrawlWorker, defaultDeps } from '../../src/workers/worker';
import { crawlMonitorWorkflow } from '../../src/workflows/monitor';
import { monitorWorkflowId, type MonitorStats } from '../../src/workflows/monitorState';
import { createLocalEnv } from '../support/temporal';
import { jpeg } from '../support/images';
import { readRecords } from '../support/records';

const ROOT = path.resolve(__dirname, '..', '..');
const CLI = path.join(ROOT, 'bin', 'crawl');

async function imageOrigin(host: string, port = 0): Promise<Origin> {
  const body = await jpeg(400, 300);
  return new Origin().route('*', (req, res) => {
    if (req.url === '/robots.txt') { res.writeHead(404); res.end(); return; }
    if (req.url?.startsWith('/missing')) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
    res.end(body);
  }).start(host, port);
}

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
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
    const [a, b, c] = origins as [Origin, Origin, Origin];
    const lines: string[] = [];
    for (let i = 0; i < 30; i++) lines.push(JSON.stringify({ url: a.url(`/e2e/a${i}.jpg`) }));
    for (let i = 0; i < 60; i++) lines.push(JSON.stringify({ url: b.url(`/e2e/b${i}.jpg`), source: 'fast' }));
    for (let i = 0; i < 20; i++) lines.push(JSON.stringify({ url: c.url(`/e2e/c${i}.jpg`) }));
    lines.push(JSON.stringify({ url: c.url('/missing/1.jpg') }));
    lines.push('{"url": "not a url"}');
    const manifest = path.join(dataDir, 'manifest.ndjson');
    fs.writeFileSync(manifest, lines.join('\n'));
    const catalog = new Map([[`127.0.0.1:${a.port}`, { rate: 4 }], ['fast', { rate: 15, burst: 2 }], [`127.0.0.3:${a.port}`, { rate: 3 }]]);
    const taskQueue = 'e2e';
    const deps = defaultDeps({ dataDir, allowNetworks: ['127.0.0.0/8'] });
    const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue, deps });
    const started = Date.now();
    await worker.runUntil(async () => {
      const bad: number[] = [];
      const summary = await startCrawl({ client: env.client, store: new LocalStore(path.join(dataDir, 'store')), manifest, catalog, taskQueue, chunkSize: 25, onBadLine: (l) => bad.push(l.line) });
      expect(bad).toEqual([112]);
      expect([...summary.sources.keys()].sort()).toEqual([`127.0.0.1:${a.port}`, `127.0.0.3:${a.port}`, 'fast'].sort());
      const results = await Promise.all([...summary.sources.keys()].map((s) => env.client.workflow.getHandle(monitorWorkflowId(s)).result() as Promise<MonitorStats>));
      expect(results.map((r) => r.urls.finished).reduce((x, y) => x + y, 0)).toBe(111);
    });
    const records = readRecords(dataDir);
    expect(records).toHaveLength(111);
    expect(new Set(records.map((r) => r.url)).size).toBe(111);
    expect(records.filter((r) => r.outcome === 'linkrot').map((r) => r.url)).toEqual([c.url('/missing/1.jpg')]);
    expect(records.filter((r) => r.outcome === 'done')).toHaveLength(110);
    // What each site actually saw, robots.txt included.
    const seen = (o: Origin) => o.requests.filter((r) => r.atMs >= started).map((r) => r.atMs);
    const trace = (o: Origin) => o.requests.filter((r) => r.atMs >= started).map((r) => `${r.atMs - started} ${r.path}`).join('\n');
    if (maxInAnyWindow(seen(a), 1_000) > ceilings(4, 0).perSecond) throw new Error(`source a over its ceiling:\n${trace(a)}`);
    expect(maxInAnyWindow(seen(a), 1_000)).toBeLessThanOrEqual(ceilings(4, 0).perSecond);
    expect(maxInAnyWindow(seen(b), 1_000)).toBeLessThanOrEqual(ceilings(15, 2).perSecond);
    expect(maxInAnyWindow(seen(c), 1_000)).toBeLessThanOrEqual(ceilings(3, 0).perSecond);
    // Each image downloaded once: no retried attempt or second grant asked for it again.
    const imagePaths = [a, b, c].flatMap((o) => o.requests.filter((r) => r.atMs >= started && r.path.startsWith('/e2e/')).map((r) => r.path));
    expect(imagePaths).toHaveLength(110);
    expect(new Set(imagePaths).size).toBe(110);
  });

  it('survives a worker killed with SIGKILL mid-crawl: every URL ends with exactly one record', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kill-'));
    const a = origins[3]!; // a source of its own
    const manifest = path.join(dataDir, 'manifest.txt');
    fs.writeFileSync(manifest, Array.from({ length: 60 }, (_, i) => a.url(`/kill/${i}.jpg`)).join('\n'));
    const childEnv = { TEMPORAL_ADDRESS: env.address, CRAWL_DATA_DIR: dataDir, CRAWL_TASK_QUEUE: 'kill-test', CRAWL_LOG_LEVEL: 'warn' };
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
      expect(started.stdout).toContain('60 URLs');
      const deadline = Date.now() + 60_000;
      while (readRecords(dataDir).length < 15 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      if (readRecords(dataDir).length < 15) throw new Error(`no progress; worker log:\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`);
      worker.kill('SIGKILL');
      await new Promise((r) => worker.once('exit', r));
      const atKill = readRecords(dataDir).length;
      expect(atKill).toBeLessThan(60);
      worker = startWorker();
      const stats = (await env.client.workflow.getHandle(monitorWorkflowId(`127.0.0.4:${a.port}`)).result()) as MonitorStats;
      expect(stats.urls).toMatchObject({ total: 60, finished: 60 });
      const records = readRecords(dataDir);
      expect(records).toHaveLength(60);
      expect(new Set(records.map((r) => r.url)).size).toBe(60);
      expect(records.every((r) => r.outcome === 'done')).toBe(true);
      // Starting the same manifest again crawls nothing twice.
      const before = a.requests.length;
      const again = await runCli(['start', manifest], childEnv);
      expect(again.stdout).toContain('60 already crawled');
      await new Promise((r) => setTimeout(r, 1_000));
      expect(a.requests.length).toBe(before);
    } finally {
      worker.kill('SIGKILL');
    }
  });

  it('gives clear errors for an unknown source and a bad rate', async () => {
    const childEnv = { TEMPORAL_ADDRESS: env.address };
    const unknown = await runCli(['pause', 'no-such-source'], childEnv);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no crawl monitor for source "no-such-source".*crawl status/);
    const badRate = await runCli(['set-rate', 'anything', '-5'], childEnv);
    expect(badRate.code).not.toBe(0);
    expect(badRate.stderr).toMatch(/rate must be greater than 0/);
    const noServer = await runCli(['status'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    expect(noServer.code).toBe(1);
    expect(noServer.stderr).toMatch(/cannot reach the Temporal server at 127\.0\.0\.1:1.*crawl dev-server/);
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
      expect((await runCli(['resume', 'operator.test', '--rate', '3'], childEnv)).stdout).toContain('running');
      expect((await runCli(['stop', 'operator.test'], childEnv)).stdout).toContain('stopped');
      expect((await handle.result()).state).toBe('stopped');
    });
  });
});
