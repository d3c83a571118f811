/**
 * npm run bench:soak — `crawl run` as an operator runs it (embedded server, in-process worker,
 * local store) on a larger manifest: N real-photo URLs over S loopback sources at different
 * rates, for several minutes. It checks what must hold however long a crawl runs: one record per
 * URL, one request per image, no source above its ceiling in any second; and it samples the
 * crawl's memory every 10 s (bench/memorySampler) to show whether the live heap grows with time.
 * Last line: JSON.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ceilings } from '../src/politeness/pacing';
import { makeImageSet, writeSiteFiles } from './images';
import { fmt, max1s, startOriginProcess } from './support';

const N = Number(process.env.BENCH_SOAK_URLS ?? 40_000);
const S = Number(process.env.BENCH_SOAK_SOURCES ?? 20);
const RATES = [2, 5, 10, 20, 30];
/** Samples before this are the start-up (connections, JIT, caches filling), not growth. */
const SETTLE_S = 60;
/** Samples after this share of the records had been written are the wind-down (sources finishing, memory given back). */
const BUSY_UNTIL = 0.9;

interface Sample { thread: string; s: number; heapMb: number; rssMb: number; peakRssMb: number; collected: boolean }

/** Least-squares slope of y over x. */
function slope(points: [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  const sxx = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return sxx ? points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0) / sxx : 0;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-soak-'));
  const site = path.join(dir, 'site');
  fs.mkdirSync(site);
  writeSiteFiles(site, await makeImageSet(24));
  // One loopback address per source, so the site's log tells the sources apart.
  const hosts = Array.from({ length: S }, (_, k) => `127.0.1.${k + 1}`);
  const origin = await startOriginProcess(site, hosts, path.join(dir, 'origin.log'));
  const rates = hosts.map((_, k) => RATES[k % RATES.length]!);
  const rateSum = rates.reduce((a, b) => a + b, 0);
  const counts = rates.map((r) => Math.max(1, Math.round((N * r) / rateSum)));
  const lines: string[] = [];
  hosts.forEach((h, k) => {
    for (let i = 0; i < counts[k]!; i++) lines.push(JSON.stringify({ url: `http://${h}:${origin.port}/img/${lines.length}.jpg`, source: `soak${k}` }));
  });
  // Sources interleaved, as in a manifest put together from many sites (a fixed shuffle).
  for (let i = lines.length - 1; i > 0; i--) {
    const j = (i * 7919) % (i + 1);
    [lines[i], lines[j]] = [lines[j]!, lines[i]!];
  }
  const manifest = path.join(dir, 'manifest.ndjson');
  const catalog = path.join(dir, 'catalog.json');
  fs.writeFileSync(manifest, `${lines.join('\n')}\n`);
  fs.writeFileSync(catalog, JSON.stringify(rates.map((rate, k) => ({ name: `soak${k}`, rate }))));
  process.stderr.write(`soak: ${lines.length} URLs over ${S} sources (${rateSum} req/s in all) in ${dir}\n`);

  const memlog = path.join(dir, 'memory.ndjson');
  const out = path.join(dir, 'out');
  const started = Date.now();
  const child = spawn(process.execPath, [path.resolve(__dirname, '..', '..', 'bin', 'crawl'), 'run', manifest, '--catalog', catalog, '--out', out, '--allow-network', '127.0.0.0/8'], {
    env: {
      ...process.env,
      CRAWL_BENCH_MEMLOG: memlog,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --expose-gc --require ${path.join(__dirname, 'memorySampler.js')}`.trim(),
    },
    stdio: ['ignore', fs.openSync(path.join(dir, 'run.out'), 'w'), fs.openSync(path.join(dir, 'run.err'), 'w')],
  });
  const exitCode = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const wallS = (Date.now() - started) / 1000;
  const arrivals = await origin.stop();

  const records = fs.readFileSync(path.join(out, 'metadata.ndjson'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { url: string; outcome: string; recordedAt: string });
  const recordedAt = records.map((r) => Date.parse(r.recordedAt)).sort((a, b) => a - b);
  const busyUntilS = ((recordedAt[Math.floor(recordedAt.length * BUSY_UNTIL)] ?? Date.now()) - started) / 1000;
  const perUrl = new Map<string, number>();
  for (const r of records) perUrl.set(r.url, (perUrl.get(r.url) ?? 0) + 1);
  const outcomes: Record<string, number> = {};
  for (const r of records) outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
  const perRequest = new Map<string, number>();
  for (const a of arrivals) if (a.path.startsWith('/img/')) perRequest.set(`${a.host}${a.path}`, (perRequest.get(`${a.host}${a.path}`) ?? 0) + 1);
  const max1sRatio = Math.max(...hosts.map((h, k) => max1s(arrivals.filter((a) => a.host.startsWith(`${h}:`)).map((a) => a.atMs)) / ceilings(rates[k]!, 0).perSecond));

  const samples = fs.existsSync(memlog) ? fs.readFileSync(memlog, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Sample) : [];
  // Per thread, while the crawl is in full swing (after start-up, before the wind-down): live
  // heap at the start and end of that window, and its trend.
  const busy = (s: Sample) => s.s >= SETTLE_S && s.s <= busyUntilS;
  const heap = Object.fromEntries([...new Set(samples.map((s) => s.thread))].map((thread) => {
    const mine = samples.filter((s) => s.thread === thread && busy(s));
    return [thread, {
      settledMb: mine[0]?.heapMb ?? null, endMb: mine[mine.length - 1]?.heapMb ?? null,
      mbPer10Min: fmt(slope(mine.map((s) => [s.s, s.heapMb])) * 600, 2),
    }];
  }));
  const main = samples.filter((s) => s.thread === 'main');
  const settled = main.filter(busy);

  console.log(JSON.stringify({
    exitCode, urls: lines.length, sources: S, wallS: fmt(wallS, 1), imagesPerS: fmt(records.length / wallS, 1),
    records: records.length, outcomes,
    missingRecords: lines.length - perUrl.size, duplicateRecords: [...perUrl.values()].filter((n) => n > 1).length,
    imagesRequested: perRequest.size, requestedTwice: [...perRequest.values()].filter((n) => n > 1).length,
    max1sRatio: fmt(max1sRatio),
    memoryWindowS: [SETTLE_S, Math.round(busyUntilS)],
    heapAfterFullGc: heap,
    rssMb: { settled: settled[0]?.rssMb ?? null, end: settled[settled.length - 1]?.rssMb ?? null, mbPer10Min: fmt(slope(settled.map((s) => [s.s, s.rssMb])) * 600, 1) },
    peakRssMb: Math.round(Math.max(0, ...main.map((s) => s.peakRssMb))),
    gcForced: samples.every((s) => s.collected),
  }));
  if (exitCode !== 0) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
