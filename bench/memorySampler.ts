/**
 * Preloaded into `crawl run` by bench:soak (NODE_OPTIONS=--require, also run in worker threads,
 * where the workflows run): every 10 s it forces a full collection and appends the live heap of
 * its thread, the process's RSS and its peak to the file in CRAWL_BENCH_MEMLOG. The heap after a
 * full collection is what a leak grows; RSS alone mixes in the allocator's slack.
 */
import fs from 'node:fs';
import v8 from 'node:v8';
import { isMainThread, threadId } from 'node:worker_threads';

const file = process.env.CRAWL_BENCH_MEMLOG;
const EVERY_MS = 10_000;

if (file) {
  const started = Date.now();
  const gc = (globalThis as { gc?: () => void }).gc;
  setInterval(() => {
    gc?.();
    const mb = (n: number) => Math.round((n / 1048576) * 10) / 10;
    const sample = {
      thread: isMainThread ? 'main' : `worker-${threadId}`,
      s: Math.round((Date.now() - started) / 1000),
      heapMb: mb(v8.getHeapStatistics().used_heap_size),
      rssMb: mb(process.memoryUsage.rss()),
      peakRssMb: mb(process.resourceUsage().maxRSS * 1024),
      collected: gc !== undefined,
    };
    fs.appendFileSync(file, `${JSON.stringify(sample)}\n`);
  }, EVERY_MS).unref();
}
