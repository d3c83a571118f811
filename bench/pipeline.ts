/**
 * npm run bench:pipeline — the same images on this machine through sharp alone (analyse +
 * thumbnail) and through the full fetchBatch activity fetching them from a loopback origin and
 * storing thumbnails and records in a local store, in several rounds. Prints both rates, their
 * ratio and peak RSS. Run it as the worker runs (UV_THREADPOOL_SIZE=16, as bin/crawl sets it).
 */
import fs from 'node:fs';
import { PerformanceObserver, constants as perfConstants } from 'node:perf_hooks';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createCrawlActivities } from '../src/activities/crawlActivities';
import { StoreRecorder } from '../src/activities/storeRecorder';
import { GrantJournal } from '../src/activities/grantJournal';
import { pipelineConfigFromEnv } from '../src/pipeline/config';
import { ImagePipeline } from '../src/pipeline/imagePipeline';
import { Spool } from '../src/pipeline/spool';
import { LocalStore } from '../src/pipeline/store';
import type { FetchBatchResult } from '../src/shared/types';
import { tuneWorkerProcess } from '../src/workers/worker';
import { makeImageSet, sharpAlone, writeSiteFiles } from './images';
import { cpuMsByProcess, cpuMsSince, fileCreateCostUs, fmt, peakRssMb, startOriginProcess, trackThreadCpu } from './support';

const N = Number(process.env.BENCH_IMAGES ?? 600);
const RATE = Number(process.env.BENCH_RATE ?? 200); // the brief's largest per-source rate
const WARM_UP = Number(process.env.BENCH_WARM_UP ?? 600);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

async function main(): Promise<void> {
  tuneWorkerProcess(); // as createCrawlWorker does
  const images = await makeImageSet(N);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-pipeline-'));
  fs.mkdirSync(path.join(dir, 'site'));
  writeSiteFiles(path.join(dir, 'site'), images);
  const site = await startOriginProcess(path.join(dir, 'site'), ['127.0.0.1']);
  const origin = (p: string) => `http://127.0.0.1:${site.port}${p}`;
  const store = new LocalStore(path.join(dir, 'store'));
  const createUs = [fileCreateCostUs(dir)];
  const pipeline = new ImagePipeline(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }), store, new Spool(path.join(dir, 'spool')));
  // As a worker has it (defaultDeps), the journal of each grant's finished URLs included.
  const acts = createCrawlActivities({ processor: pipeline, recorder: new StoreRecorder(store), store, journal: new GrantJournal(path.join(dir, 'journal')) });
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

  // Warm-up: robots.txt, connections, and V8's optimising compiler, which was still compiling
  // ~40 functions a second after 60 images (a worker runs for hours; the bench measures that).
  await crawl(Array.from({ length: WARM_UP }, (_, i) => origin(`/warm/${i}.jpg`)));
  await sharpAlone(images.slice(0, 60));
  // New URLs every round, as a crawl sees: re-crawling the same URLs would overwrite the same
  // thumbnails, and on ext4 without a journal (these machines) every inode freed in the last
  // minutes makes creating the next file slower (see fileCreateCostUs).
  const roundUrls = (r: number) => images.map((_, i) => origin(`/r${r}/${i}.jpg`));
  // This machine's speed drifts by 10-30% within minutes (other tenants of the host). Each
  // round measures sharp alone and the activity back to back (in alternating order) and gives
  // one ratio; the median of the rounds' ratios is the figure, the spread shows the drift.
  const rounds: { sharpPerS: number; crawl: Awaited<ReturnType<typeof crawl>>; ratio: number }[] = [];
  // CPU per image by process: on a CPU-bound machine the ratio of the rates follows it.
  const cpu = { sharp: [] as Record<string, number>[], crawl: [] as Record<string, number>[] };
  // And the crawler's CPU by thread: what the activity adds beyond sharp's work, and where.
  const threadCpu = { sharp: [] as Record<string, number>[], crawl: [] as Record<string, number>[] };
  // Main-thread GC pauses by round: the activity's CPU per image moves by a millisecond or more
  // between rounds, and full collections are the first suspect.
  let gc = { majorMs: 0, major: 0, minorMs: 0 };
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
      if (kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) { gc.majorMs += e.duration; gc.major += 1; } else gc.minorMs += e.duration;
    }
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  const gcByRound = { sharp: [] as typeof gc[], crawl: [] as typeof gc[] };
  for (let r = 0; r < ROUNDS; r++) {
    let sharpPerS = 0;
    let crawled: Awaited<ReturnType<typeof crawl>> | undefined;
    for (const phase of r % 2 === 0 ? ['sharp', 'crawl'] as const : ['crawl', 'sharp'] as const) {
      const before = cpuMsByProcess();
      const threads = trackThreadCpu();
      gc = { majorMs: 0, major: 0, minorMs: 0 };
      if (phase === 'sharp') sharpPerS = await sharpAlone(images);
      else crawled = await crawl(roundUrls(r));
      cpu[phase].push(cpuMsSince(before));
      threadCpu[phase].push(threads.stop());
      await new Promise((resolve) => setImmediate(resolve)); // GC entries arrive asynchronously
      gcByRound[phase].push(gc);
    }
    rounds.push({ sharpPerS, crawl: crawled!, ratio: crawled!.perS / sharpPerS });
  }
  gcObserver.disconnect();
  createUs.push(fileCreateCostUs(dir));
  const perImage = (runs: Record<string, number>[]) => Object.fromEntries(Object.keys(runs[0]!).map((k) =>
    [k, fmt(runs.reduce((sum, r) => sum + (r[k] ?? 0), 0) / runs.length / N, 2)]));
  await pipeline.close();
  await site.stop();
  fs.rmSync(dir, { recursive: true, force: true });

  const sharpPerS = median(rounds.map((r) => r.sharpPerS));
  const activityPerS = median(rounds.map((r) => r.crawl.perS));
  const ratio = median(rounds.map((r) => r.ratio));
  const last = rounds[rounds.length - 1]!.crawl;
  console.log(`images: ${N} (${Math.round(images.reduce((s, b) => s + b.length, 0) / N / 1024)} KiB average), cores: ${os.cpus().length}; ${ROUNDS} rounds of sharp alone and the activity back to back, after a warm-up of ${WARM_UP}`);
  console.log(`sharp alone (analyse + thumbnail): ${rounds.map((r) => fmt(r.sharpPerS, 1)).join(', ')} images/s`);
  console.log(`fetchBatch activity paced at ${RATE}/s (fetch + analyse + thumbnail + store + record): ${rounds.map((r) => fmt(r.crawl.perS, 1)).join(', ')} images/s; last round ${last.done}/${N} done in ${last.grants} grant(s), ${last.missed} slots missed (CPU busy)`);
  console.log(`CPU ms per image: sharp alone ${JSON.stringify(perImage(cpu.sharp))}; activity ${JSON.stringify(perImage(cpu.crawl))}`);
  console.log(`the crawler's CPU ms per image by thread: sharp alone ${JSON.stringify(perImage(threadCpu.sharp))}; activity ${JSON.stringify(perImage(threadCpu.crawl))}`);
  // By round: a round whose rate fell with its CPU per image unchanged waited on something.
  console.log(`CPU ms per image by round (crawler): sharp alone ${cpu.sharp.map((c) => fmt((c.crawler ?? 0) / N, 2)).join(', ')}; activity ${cpu.crawl.map((c) => fmt((c.crawler ?? 0) / N, 2)).join(', ')}`);
  const gcLine = (g: typeof gc[]) => g.map((x) => `${x.major}/${fmt(x.majorMs, 0)}/${fmt(x.minorMs, 0)}`).join(', ');
  console.log(`GC by round (full collections / their ms / scavenge ms): sharp alone ${gcLine(gcByRound.sharp)}; activity ${gcLine(gcByRound.crawl)}`);
  console.log(`creating a file in the bench's directory: ${createUs.join(' us before, ')} us after (median; ~30 us unless many files were removed in the last minutes)`);
  console.log(`ratio by round ${rounds.map((r) => fmt(r.ratio)).join(', ')}: median ${fmt(ratio)} (target >= 0.9); peak RSS ${peakRssMb()} MB`);
  console.log(JSON.stringify({
    bench: 'pipeline', images: N, pacedAt: RATE, sharpPerS: fmt(sharpPerS, 1), activityPerS: fmt(activityPerS, 1), ratio: fmt(ratio),
    ratioByRound: rounds.map((r) => fmt(r.ratio)), done: last.done, grants: last.grants, missedSlots: last.missed, peakRssMb: peakRssMb(),
    fileCreateUs: createUs, cpuMsPerImage: { sharpAlone: perImage(cpu.sharp), activity: perImage(cpu.crawl) },
    threadCpuMsPerImage: { sharpAlone: perImage(threadCpu.sharp), activity: perImage(threadCpu.crawl) },
  }));
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
