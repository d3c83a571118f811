import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import type http from 'node:http';
import sharp from 'sharp';
import { Origin } from '../src/demo/origin';
import { ThinUplink } from '../test/support/thinUplink';

/**
 * How many downloads `crawl run` keeps open at sites of large images, each a loopback origin in
 * this process (the crawl runs as its own process, as an operator starts it):
 * - thin: one 1 MB/s uplink shared by the downloads open (485 KB JPEGs, 200 URLs at 5/s);
 * - thin-chunked: the same, its bodies sent without Content-Length;
 * - per-connection: each download gets 1 MB/s of its own (400 URLs at 20/s, about 10 open);
 * - fast: no limit (1.1 MB JPEGs, 600 URLs at 20/s);
 * - conn-limited: small images answered after 1 s, and 503 at once to a request that finds four
 *   open (nginx's limit_conn), 300 URLs at 10/s;
 * - conn-limited-3w: 1,200 such URLs (three chunks, so three batches) crawled by three workers,
 *   as workers on one machine or behind one address are (a dev server of its own, `crawl worker`
 *   x 3, `crawl run` with TEMPORAL_ADDRESS).
 * The origin counts the most open in each second. Usage: npm run bench:sites [-- NAME...]
 * (BENCH_SITES_ROOT=DIR: crawl with that checkout's build instead, to compare; BENCH_SITES_LOGS=DIR:
 * the `crawl run`'s log (its embedded worker's lines) and conn-limited-3w's workers' logs kept
 * there, with CRAWL_LOG_LEVEL=debug their waits too).
 * Its last line is one JSON object, per scenario: seconds, records, mostOpen, meanOpen,
 * refusals (503s) and when they came, and the workers' open-limit changes (site-open-limit lines).
 */

interface Scenario {
  name: string;
  urls: number;
  rate: number;
  image: 'small' | 'medium' | 'large';
  route: (body: Buffer) => { handler: Handler; stop?: () => void; refusals?: () => number[] };
  /** Workers of their own beside a dev server of its own; absent: `crawl run`'s embedded default. */
  workers?: number;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

const SCENARIOS: Scenario[] = [
  { name: 'thin', urls: 200, rate: 5, image: 'medium', route: (body) => thin(body, false) },
  { name: 'thin-chunked', urls: 200, rate: 5, image: 'medium', route: (body) => thin(body, true) },
  { name: 'per-connection', urls: 400, rate: 20, image: 'medium', route: (body) => ({ handler: perConnection(body, 1_000_000) }) },
  { name: 'fast', urls: 600, rate: 20, image: 'large', route: (body) => ({ handler: (_q, r) => { r.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length }); r.end(body); } }) },
  { name: 'conn-limited', urls: 300, rate: 10, image: 'small', route: (body) => connLimited(body, 4, 1_000) },
  { name: 'conn-limited-3w', urls: 1200, rate: 10, image: 'small', route: (body) => connLimited(body, 4, 1_000), workers: 3 },
];

function connLimited(body: Buffer, most: number, answerMs: number): ReturnType<Scenario['route']> {
  let open = 0;
  const refusals: number[] = [];
  const handler: Handler = (_req, res) => {
    if (open >= most) {
      refusals.push(Date.now());
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('too many connections');
      return;
    }
    open += 1;
    const timer = setTimeout(() => {
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
      res.end(body);
    }, answerMs);
    res.on('close', () => {
      clearTimeout(timer);
      open -= 1;
    });
  };
  return { handler, refusals: () => refusals };
}

function thin(body: Buffer, chunked: boolean): ReturnType<Scenario['route']> {
  const link = new ThinUplink(body, 1_000_000, { chunked });
  return { handler: link.route, stop: () => link.stop() };
}

/** Each response paced to `bytesPerS` on its own: a site slow per connection, not full. */
function perConnection(body: Buffer, bytesPerS: number): Handler {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
    let sent = 0;
    const tick = setInterval(() => {
      const n = Math.min(bytesPerS / 100, body.length - sent);
      res.write(body.subarray(sent, sent + n));
      sent += n;
      if (sent >= body.length) {
        clearInterval(tick);
        res.end();
      }
    }, 10);
    res.on('close', () => clearInterval(tick));
  };
}

/** The embedded default, whatever server the shell names. */
function embeddedEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.TEMPORAL_ADDRESS;
  return env;
}

/** A dev server on free ports and `n` workers against it, sharing the run's store (CRAWL_DATA_DIR). */
async function ownWorkers(crawl: string, dir: string, out: string, n: number, watch: (c: ChildProcess) => void): Promise<{ address: string; stop: () => Promise<void> }> {
  const [port, uiPort] = [await freePort(), await freePort()];
  const address = `127.0.0.1:${port}`;
  const server = spawn(process.execPath, [crawl, 'dev-server', '--data-dir', path.join(dir, 'temporal'), '--port', String(port), '--ui-port', String(uiPort)], {
    cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: embeddedEnv(),
  });
  await new Promise<void>((resolve, reject) => {
    readline.createInterface({ input: server.stdout! }).on('line', (line) => { if (line.startsWith('Temporal server at')) resolve(); });
    server.on('exit', (code) => reject(new Error(`crawl dev-server exited (${code}) before it was ready`)));
  });
  const workers = Array.from({ length: n }, () => {
    const w = spawn(process.execPath, [crawl, 'worker', '--allow-network', '127.0.0.0/8'], {
      cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...embeddedEnv(), TEMPORAL_ADDRESS: address, CRAWL_DATA_DIR: out },
    });
    watch(w);
    if (process.env.BENCH_SITES_LOGS) {
      const file = fs.createWriteStream(path.join(process.env.BENCH_SITES_LOGS, `worker-${w.pid}.log`));
      w.stderr!.pipe(file);
    }
    return w;
  });
  const ended = (c: ChildProcess) => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise<void>((resolve) => c.once('exit', () => resolve())));
  return {
    address,
    stop: async () => {
      for (const w of workers) w.kill('SIGTERM');
      await Promise.all(workers.map(ended));
      server.kill('SIGTERM');
      await ended(server);
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

async function noise(width: number, height: number, quality: number): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, noise: { type: 'gaussian', mean: 128, sigma: 60 }, background: '#808080' } }).jpeg({ quality }).toBuffer();
}

interface Result {
  seconds: number;
  exitCode: number | null;
  records: number;
  mostOpen: number;
  meanOpen: number;
  refusals?: number;
  /** Seconds from the crawl's start to each refusal. */
  refusedAt?: number[];
  firstSeconds: number[];
  changes: string[];
}

async function run(s: Scenario, body: Buffer, root: string, work: string): Promise<Result> {
  const dir = fs.mkdtempSync(path.join(work, `${s.name}-`));
  const { handler, stop, refusals } = s.route(body);
  let open = 0;
  let most = 0;
  const perSecond: number[] = [];
  const origin = new Origin()
    .route('/robots.txt', (_q, r) => { r.writeHead(404); r.end(); })
    .route('*', (req, res) => {
      open += 1;
      most = Math.max(most, open);
      res.on('close', () => { open -= 1; });
      handler(req, res);
    });
  await origin.start('127.0.6.1');
  const sampler = setInterval(() => { perSecond.push(most); most = open; }, 1_000);
  const manifest = path.join(dir, 'manifest.ndjson');
  fs.writeFileSync(manifest, Array.from({ length: s.urls }, (_, i) => JSON.stringify({ url: origin.url(`/i/${i}.jpg`), source: s.name })).join('\n') + '\n');
  const catalog = path.join(dir, 'catalog.json');
  fs.writeFileSync(catalog, JSON.stringify([{ name: s.name, rate: s.rate }]));
  const out = path.join(dir, 'out');
  const started = Date.now();
  const changes: string[] = [];
  const crawl = path.join(root, 'bin', 'crawl');
  const onLine = (line: string) => {
    if (!line.includes('"site-open-limit"')) return;
    try {
      const e = JSON.parse(line) as { kind: string; limit?: number };
      changes.push(e.limit !== undefined ? `${e.kind} ${e.limit}` : e.kind);
    } catch { /* not a log line of ours: a progress line that names one */ }
  };
  const watch = (child: ChildProcess) => {
    readline.createInterface({ input: child.stdout! }).on('line', onLine);
    readline.createInterface({ input: child.stderr! }).on('line', onLine);
  };
  const own = s.workers ? await ownWorkers(crawl, dir, out, s.workers, watch) : undefined;
  const exitCode = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, [crawl, 'run', manifest, '--catalog', catalog, '--out', out, '--allow-network', '127.0.0.0/8'], {
      cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: own ? { ...embeddedEnv(), TEMPORAL_ADDRESS: own.address } : embeddedEnv(),
    });
    watch(child);
    // With its embedded worker, the run's own log holds the worker's lines.
    if (process.env.BENCH_SITES_LOGS) child.stderr!.pipe(fs.createWriteStream(path.join(process.env.BENCH_SITES_LOGS, `run-${s.name}.log`)));
    child.on('exit', resolve);
  });
  const seconds = (Date.now() - started) / 1_000;
  await own?.stop();
  clearInterval(sampler);
  stop?.();
  await origin.stop();
  const metadata = path.join(out, 'metadata.ndjson');
  const records = fs.existsSync(metadata) ? fs.readFileSync(metadata, 'utf8').split('\n').filter(Boolean).length : 0;
  const busy = perSecond.filter((n) => n > 0);
  return {
    seconds: Math.round(seconds * 10) / 10, exitCode, records,
    mostOpen: Math.max(0, ...busy), meanOpen: Math.round((busy.reduce((a, n) => a + n, 0) / Math.max(1, busy.length)) * 100) / 100,
    ...(refusals ? { refusals: refusals().length, refusedAt: refusals().map((t) => Math.round((t - started) / 100) / 10) } : {}), firstSeconds: busy.slice(0, 10), changes,
  };
}

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const unknown = only.filter((n) => !SCENARIOS.some((s) => s.name === n));
  if (unknown.length) throw new Error(`unknown scenario ${unknown.join(', ')}: one of ${SCENARIOS.map((s) => s.name).join(', ')}`);
  // Another checkout's build to compare with (its bin/crawl, its dist).
  const root = process.env.BENCH_SITES_ROOT ? path.resolve(process.env.BENCH_SITES_ROOT) : path.resolve(__dirname, '..', '..');
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-sites-'));
  const images = { small: await noise(320, 240, 80), medium: await noise(900, 700, 90), large: await noise(1400, 1000, 92) };
  const results: Record<string, Result> = {};
  for (const s of SCENARIOS.filter((x) => !only.length || only.includes(x.name))) {
    const r = (results[s.name] = await run(s, images[s.image], root, work));
    console.log(`${s.name.padEnd(15)} ${s.urls} URLs at ${s.rate}/s: ${r.seconds} s, ${r.records} records (exit ${r.exitCode}), ` +
      `most open ${r.mostOpen}, mean ${r.meanOpen}${r.refusals !== undefined ? `, ${r.refusals} refused${r.refusals ? ` (at ${r.refusedAt!.join(', ')} s)` : ''}` : ''}, first seconds [${r.firstSeconds.join(', ')}]; ` +
      `${r.changes.slice(0, 6).join(', ') || 'no open-limit change'}`);
  }
  fs.rmSync(work, { recursive: true, force: true });
  console.log(JSON.stringify(results));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
