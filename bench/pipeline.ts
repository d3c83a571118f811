/**
 * npm run bench:pipeline — the same images twice on this machine: sharp alone (analyse +
 * thumbnail) and the full fetchBatch activity fetching them from a loopback origin and storing
 * thumbnails and records in a local store. Prints both rates, their ratio and peak RSS.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createCrawlActivities } from '../src/activities/crawlActivities';
import { StoreRecorder } from '../src/activities/storeRecorder';
import { pipelineConfigFromEnv } from '../src/pipeline/config';
import { ImagePipeline } from '../src/pipeline/imagePipeline';
import { Spool } from '../src/pipeline/spool';
import { LocalStore } from '../src/pipeline/store';
import type { FetchBatchResult } from '../src/shared/types';
import { helperNiceFromEnv, keepHelperThreadsBelowMain } from '../src/temporal/priority';
import { makeImageSet, sharpAlone } from './images';
import { cpuMsByProcess, cpuMsSince, fmt, peakRssMb, startOriginProcess } from './support';

const N = Number(process.env.BENCH_IMAGES ?? 600);
const RATE = Number(process.env.BENCH_RATE ?? 200); // the brief's largest per-source rate
const WARM_UP = 60;

async function main(): Promise<void> {
  // Thread priorities as in a crawl worker (createCrawlWorker sets them the same way).
  keepHelperThreadsBelowMain(helperNiceFromEnv());
  const images = await makeImageSet(N);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-pipeline-'));
  fs.mkdirSync(path.join(dir, 'site'));
  images.forEach((b, i) => fs.writeFileSync(path.join(dir, 'site', `${i}.jpg`), b));
  const site = await startOriginProcess(path.join(dir, 'site'), ['127.0.0.1']);
  const origin = (p: string) => `http://127.0.0.1:${site.port}${p}`;
  const store = new LocalStore(path.join(dir, 'store'));
  const pipeline = new ImagePipeline(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }), store, new Spool(path.join(dir, 'spool')));
  const acts = createCrawlActivities({ processor: pipeline, recorder: new StoreRecorder(store), store });
  const intervalMs = 1000 / RATE;
  const runGrant = (urls: string[], grantId: number, startMs: number, endMs: number) =>
    new MockActivityEnvironment().run(acts.fetchBatch, {
      source: 'bench', batchId: 'bench', grantId, maxAttempts: 1, items: urls.map((url) => ({ url, attempt: 1 })),
      schedule: { startMs, endMs, intervalMs, burstSlots: 0 },
    }) as Promise<FetchBatchResult>;

  /**
   * The activity alone: one grant for all the URLs, paced at RATE, with room for twice as many
   * slots as URLs so that slots missed while the CPU is saturated do not end the grant before
   * the work is done (re-granting is the workflow's part, measured by bench:e2e). Anything
   * still unused is granted again.
   */
  async function crawl(urls: string[]): Promise<{ perS: number; done: number; grants: number; missed: number }> {
    const started = performance.now();
    let pending = urls;
    let grants = 0;
    let done = 0;
    let missed = 0;
    while (pending.length > 0 && grants < 10) {
      const startMs = Date.now() + 50;
      const r = await runGrant(pending, ++grants, startMs, startMs + 2 * pending.length * intervalMs);
      done += r.outcomes.filter((o) => o.cls === 'done').length;
      missed += r.missedSlots ?? 0;
      const left = pending;
      pending = r.unused.map((i) => left[i]!);
    }
    return { perS: urls.length / ((performance.now() - started) / 1000), done, grants, missed };
  }

  // Warm-up (robots.txt, connections, JIT), then each measurement twice in the order
  // sharp, activity, activity, sharp: this machine's speed drifts by 10-30% within minutes
  // (other tenants of the host), and that order cancels a steady drift out of the ratio.
  await crawl(Array.from({ length: WARM_UP }, (_, i) => origin(`/warm/${i}.jpg`)));
  await sharpAlone(images.slice(0, WARM_UP));
  const urls = images.map((_, i) => origin(`/img/${i}.jpg`));
  const sharpRuns: number[] = [];
  const crawlRuns: Awaited<ReturnType<typeof crawl>>[] = [];
  // CPU per image by process: on a CPU-bound machine the ratio of the rates follows it.
  const cpu = { sharp: [] as Record<string, number>[], crawl: [] as Record<string, number>[] };
  for (const phase of ['sharp', 'crawl', 'crawl', 'sharp'] as const) {
    const before = cpuMsByProcess();
    if (phase === 'sharp') sharpRuns.push(await sharpAlone(images));
    else crawlRuns.push(await crawl(urls));
    cpu[phase].push(cpuMsSince(before));
  }
  const perImage = (runs: Record<string, number>[]) => Object.fromEntries(Object.keys(runs[0]!).map((k) =>
    [k, fmt(runs.reduce((sum, r) => sum + (r[k] ?? 0), 0) / runs.length / N, 2)]));
  await pipeline.close();
  await site.stop();

  const sharpPerS = mean(sharpRuns);
  const activityPerS = mean(crawlRuns.map((r) => r.perS));
  const last = crawlRuns[crawlRuns.length - 1]!;
  console.log(`images: ${N} (${Math.round(images.reduce((s, b) => s + b.length, 0) / N / 1024)} KiB average), cores: ${os.cpus().length}; two rounds each (sharp, activity, activity, sharp), after a warm-up of ${WARM_UP}`);
  console.log(`sharp alone (analyse + thumbnail): ${sharpRuns.map((r) => fmt(r, 1)).join(', ')} images/s`);
  console.log(`fetchBatch activity paced at ${RATE}/s (fetch + analyse + thumbnail + store + record): ${crawlRuns.map((r) => fmt(r.perS, 1)).join(', ')} images/s; last round ${last.done}/${N} done in ${last.grants} grant(s), ${last.missed} slots missed (CPU busy)`);
  console.log(`CPU ms per image: sharp alone ${JSON.stringify(perImage(cpu.sharp))}; activity ${JSON.stringify(perImage(cpu.crawl))}`);
  console.log(`ratio ${fmt(activityPerS / sharpPerS)} (target >= 0.9); peak RSS ${peakRssMb()} MB`);
  console.log(JSON.stringify({
    bench: 'pipeline', images: N, pacedAt: RATE, sharpPerS: fmt(sharpPerS, 1), activityPerS: fmt(activityPerS, 1), ratio: fmt(activityPerS / sharpPerS),
    done: last.done, grants: last.grants, missedSlots: last.missed, peakRssMb: peakRssMb(),
    cpuMsPerImage: { sharpAlone: perImage(cpu.sharp), activity: perImage(cpu.crawl) },
  }));
}

function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
