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
import { makeImageSet, sharpAlone } from './images';
import { fmt, peakRssMb, startOriginProcess } from './support';

const N = Number(process.env.BENCH_IMAGES ?? 300);

async function main(): Promise<void> {
  const images = await makeImageSet(N);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-pipeline-'));
  fs.mkdirSync(path.join(dir, 'site'));
  images.forEach((b, i) => fs.writeFileSync(path.join(dir, 'site', `${i}.jpg`), b));
  const site = await startOriginProcess(path.join(dir, 'site'), ['127.0.0.1']);
  const origin = { url: (p: string) => `http://127.0.0.1:${site.port}${p}` };
  const store = new LocalStore(path.join(dir, 'store'));
  const pipeline = new ImagePipeline(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }), store, new Spool(path.join(dir, 'spool')));
  const acts = createCrawlActivities({ processor: pipeline, recorder: new StoreRecorder(store), store });
  const RATE = Number(process.env.BENCH_RATE ?? 200); // the brief's largest per-source rate
  const run = (urls: string[], grantId: number) => {
    const startMs = Date.now() + 20;
    const intervalMs = 1000 / RATE;
    return new MockActivityEnvironment().run(acts.fetchBatch, {
      source: 'bench', batchId: 'bench', grantId, maxAttempts: 1, items: urls.map((url) => ({ url, attempt: 1 })),
      schedule: { startMs, endMs: startMs + urls.length * intervalMs, intervalMs, burstSlots: 0 },
    }) as Promise<FetchBatchResult>;
  };
  await run([origin.url('/img/0.jpg')], 0); // robots.txt and connection warm-up

  const sharpPerS = await sharpAlone(images);
  const urls = images.map((_, i) => origin.url(`/img/${i}.jpg`));
  const started = performance.now();
  let pending = urls;
  let done = 0;
  let grants = 0;
  // Unused slots go back and are granted again, as the batch workflow does.
  while (pending.length > 0 && grants < 50) {
    const result = await run(pending, ++grants);
    done += result.outcomes.filter((o) => o.cls === 'done').length;
    pending = result.unused.map((i) => pending[i]!);
  }
  const activityPerS = urls.length / ((performance.now() - started) / 1000);
  await pipeline.close();
  await site.stop();

  console.log(`images: ${N} (${Math.round(images.reduce((s, b) => s + b.length, 0) / N / 1024)} KiB average), cores: ${os.cpus().length}`);
  console.log(`sharp alone (analyse + thumbnail): ${fmt(sharpPerS, 1)} images/s`);
  console.log(`fetchBatch activity paced at ${RATE}/s (fetch + analyse + thumbnail + store + record): ${fmt(activityPerS, 1)} images/s, ${done}/${N} done in ${grants} grant(s)`);
  console.log(`ratio ${fmt(activityPerS / sharpPerS)} (target >= 0.9); peak RSS ${peakRssMb()} MB`);
  console.log(JSON.stringify({ bench: 'pipeline', images: N, pacedAt: RATE, grants, sharpPerS: fmt(sharpPerS, 1), activityPerS: fmt(activityPerS, 1), ratio: fmt(activityPerS / sharpPerS), done, peakRssMb: peakRssMb() }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
