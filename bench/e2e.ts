/**
 * npm run bench:e2e — the whole crawl on the embedded default (pinned dev server, in-process
 * worker, local store): N images across 4 loopback sources, compared with sharp alone on the
 * same images in the same run; then 200 sources at 1 req/s each. Last line: JSON.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { startCrawl } from '../src/crawl/start';
import { Origin } from '../src/demo/origin';
import { LocalStore } from '../src/pipeline/store';
import { ceilings } from '../src/politeness/pacing';
import { ensureSearchAttributes } from '../src/temporal/connect';
import { installTemporalRuntime } from '../src/temporal/runtime';
import { ALL_SEARCH_ATTRIBUTES } from '../src/temporal/searchAttributes';
import { resolveTool } from '../src/temporal/tools';
import { createCrawlWorker, defaultDeps } from '../src/workers/worker';
import { monitorWorkflowId } from '../src/workflows/monitorState';
import { makeImageSet, sharpAlone } from './images';
import { fmt, historyEvents, max1s, peakRssMb, steadyRate } from './support';

const N = Number(process.env.BENCH_IMAGES ?? 1600);
const RATES = [30, 50, 70, 90];
const MANY = Number(process.env.BENCH_SOURCES ?? 200);
const MANY_URLS = Number(process.env.BENCH_SOURCE_URLS ?? 25);

async function main(): Promise<void> {
  installTemporalRuntime('WARN');
  const images = await makeImageSet(N);
  const hosts = ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4'];
  const origins: Origin[] = [];
  for (const host of hosts) {
    const o = new Origin().serve('/robots.txt', 'User-agent: *\nAllow: /\n', 'text/plain').route('*', (req, res) => {
      const i = Number(/\/(\d+)\.jpg$/.exec(req.url ?? '')?.[1] ?? -1);
      const body = images[i % images.length];
      if (!body) { res.writeHead(404); res.end(); return; }
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
      res.end(body);
    });
    await o.start(host, origins[0]?.port ?? 0);
    origins.push(o);
  }

  const cli = resolveTool('temporal');
  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable: cli ? { type: 'existing-path', path: cli } : { type: 'cached-download' }, searchAttributes: ALL_SEARCH_ATTRIBUTES, ip: '127.0.0.1' },
  });
  await ensureSearchAttributes(env.client);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-e2e-'));
  const store = new LocalStore(path.join(dir, 'store'));
  const newWorker = () => createCrawlWorker({
    connection: env.nativeConnection, taskQueue: 'bench-e2e', deps: defaultDeps({ dataDir: dir, allowNetworks: ['127.0.0.0/8'] }),
    overrides: { maxConcurrentActivityTaskExecutions: 400, maxConcurrentWorkflowTaskExecutions: 40 },
  });
  const worker = await newWorker();

  const sharpPerS = await sharpAlone(images);

  // Phase 1: N images across 4 sources at different rates.
  const manifest = path.join(dir, 'manifest.ndjson');
  // Images in proportion to each source's rate, so that no one source is the bottleneck.
  const rateSum = RATES.reduce((a, b) => a + b, 0);
  const counts = RATES.map((r) => Math.round((N * r) / rateSum));
  const total = counts.reduce((a, b) => a + b, 0);
  let offset = 0;
  fs.writeFileSync(manifest, origins.flatMap((o, k) => {
    const lines = Array.from({ length: counts[k]! }, (_, i) => JSON.stringify({ url: o.url(`/img/${offset + i}.jpg`), source: `site${k}` }));
    offset += counts[k]!;
    return lines;
  }).join('\n'));
  const catalog = new Map(RATES.map((rate, k) => [`site${k}`, { rate }]));
  let elapsedS = 0;
  await worker.runUntil(async () => {
    const started = performance.now();
    const summary = await startCrawl({ client: env.client, store, manifest, catalog, taskQueue: 'bench-e2e' });
    await Promise.all([...summary.sources.keys()].map((s) => env.client.workflow.getHandle(monitorWorkflowId(s)).result()));
    elapsedS = (performance.now() - started) / 1000;
  });
  const imagesPerS = total / elapsedS;
  const perSource = await Promise.all(origins.map(async (o, k) => {
    const times = o.requests.map((r) => r.atMs);
    const ceiling = ceilings(RATES[k]!, 0).perSecond;
    return { source: `site${k}`, rate: RATES[k]!, requests: times.length, max1s: max1s(times), ceiling, max1sRatio: fmt(max1s(times) / ceiling) };
  }));
  let events = 0;
  for (let k = 0; k < origins.length; k++) events += await historyEvents(env.client, monitorWorkflowId(`site${k}`));
  const eventsPerImage = events / total;

  // Phase 2: many small sources at 1 req/s each, all at once.
  for (const o of origins) o.requests.length = 0;
  const many = path.join(dir, 'many.ndjson');
  const lines: string[] = [];
  for (let s = 0; s < MANY; s++) {
    const o = origins[s % origins.length]!;
    for (let i = 0; i < MANY_URLS; i++) lines.push(JSON.stringify({ url: o.url(`/many/s${s}/${i}.jpg`), source: `small${s}` }));
  }
  fs.writeFileSync(many, lines.join('\n'));
  const manyCatalog = new Map(Array.from({ length: MANY }, (_, s) => [`small${s}`, { rate: 1 }]));
  await (await newWorker()).runUntil(async () => {
    const summary = await startCrawl({ client: env.client, store, manifest: many, catalog: manyCatalog, taskQueue: 'bench-e2e' });
    await Promise.all([...summary.sources.keys()].map((s) => env.client.workflow.getHandle(monitorWorkflowId(s)).result()));
  });
  const requests = origins.flatMap((o) => o.requests);
  const manyRates = Array.from({ length: MANY }, (_, s) => {
    const times = requests.filter((r) => r.path.startsWith(`/many/s${s}/`)).map((r) => r.atMs);
    return { rate: steadyRate(times, 0), max1s: max1s(times) };
  });
  const manyMinRatio = Math.min(...manyRates.map((r) => r.rate));
  await env.teardown();
  await Promise.all(origins.map((o) => o.stop()));

  console.log(`phase 1: ${total} images over 4 sources (rates ${RATES.join(', ')}/s) in ${fmt(elapsedS, 1)} s`);
  console.log(`  crawl ${fmt(imagesPerS, 1)} images/s vs sharp alone ${fmt(sharpPerS, 1)} images/s: ratio ${fmt(imagesPerS / sharpPerS)} (target >= 0.85)`);
  for (const s of perSource) console.log(`  ${s.source}: ${s.requests} requests, max ${s.max1s} in any 1 s vs ceiling ${s.ceiling} (${s.max1sRatio})`);
  console.log(`  history events per image: ${fmt(eventsPerImage)} (target <= 1)`);
  console.log(`phase 2: ${MANY} sources x ${MANY_URLS} URLs at 1 req/s: slowest source ${fmt(manyMinRatio)} req/s (target >= 0.9), max in any 1 s ${Math.max(...manyRates.map((r) => r.max1s))}`);
  console.log(JSON.stringify({
    bench: 'e2e', images: total, imagesPerS: fmt(imagesPerS, 1), sharpPerS: fmt(sharpPerS, 1), ratio: fmt(imagesPerS / sharpPerS),
    max1sRatio: Math.max(...perSource.map((s) => s.max1sRatio)), eventsPerImage: fmt(eventsPerImage), peakRssMb: peakRssMb(),
    manySources: MANY, manyMinRateRatio: fmt(manyMinRatio), perSource,
  }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
