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
import { Origin } from '../src/demo/origin';
import { makeImageSet, sharpAlone } from './images';
import { fmt, peakRssMb } from './support';

const N = Number(process.env.BENCH_IMAGES ?? 300);

async function main(): Promise<void> {
  const images = await makeImageSet(N);
  const origin = await new Origin()
    .serve('/robots.txt', 'User-agent: *\nAllow: /\n', 'text/plain')
    .route('*', (req, res) => {
      const i = Number(/\/img\/(\d+)\.jpg/.exec(req.url ?? '')?.[1] ?? -1);
      const body = images[i];
      if (!body) { res.writeHead(404); res.end(); return; }
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
      res.end(body);
    })
    .start();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-pipeline-'));
  const store = new LocalStore(path.join(dir, 'store'));
  const pipeline = new ImagePipeline(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }), store, new Spool(path.join(dir, 'spool')));
  const acts = createCrawlActivities({ processor: pipeline, recorder: new StoreRecorder(store), store });
  const run = (urls: string[], grantId: number) => {
    const startMs = Date.now() + 20;
    // A generous grant (1000/s): this measures the pipeline, not the politeness.
    return new MockActivityEnvironment().run(acts.fetchBatch, {
      source: 'bench', batchId: 'bench', grantId, maxAttempts: 1, items: urls.map((url) => ({ url, attempt: 1 })),
      schedule: { startMs, endMs: startMs + urls.length + 1_000, intervalMs: 1, burstSlots: 0 },
    }) as Promise<FetchBatchResult>;
  };
  await run([origin.url('/img/0.jpg')], 0); // robots.txt and connection warm-up

  const sharpPerS = await sharpAlone(images);
  const urls = images.map((_, i) => origin.url(`/img/${i}.jpg`));
  const started = performance.now();
  const result = await run(urls, 1);
  const activityPerS = urls.length / ((performance.now() - started) / 1000);
  const done = result.outcomes.filter((o) => o.cls === 'done').length;
  await pipeline.close();
  await origin.stop();

  console.log(`images: ${N} (${Math.round(images.reduce((s, b) => s + b.length, 0) / N / 1024)} KiB average), cores: ${os.cpus().length}`);
  console.log(`sharp alone (analyse + thumbnail): ${fmt(sharpPerS, 1)} images/s`);
  console.log(`fetchBatch activity (fetch + analyse + thumbnail + store + record): ${fmt(activityPerS, 1)} images/s, ${done}/${N} done`);
  console.log(`ratio ${fmt(activityPerS / sharpPerS)} (target >= 0.9); peak RSS ${peakRssMb()} MB`);
  console.log(JSON.stringify({ bench: 'pipeline', images: N, sharpPerS: fmt(sharpPerS, 1), activityPerS: fmt(activityPerS, 1), ratio: fmt(activityPerS / sharpPerS), done, peakRssMb: peakRssMb() }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
