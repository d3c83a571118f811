/**
 * npm run bench:thumbnails — what a thumbnail costs in each format and size the crawler offers
 * (CRAWL_THUMBNAIL_FORMAT, CRAWL_THUMBNAIL_MAX_SIDE): the bench pipeline's image set through
 * thumbnail() alone, as many at once as a worker runs, in alternating rounds so that a busy
 * moment of the host does not fall on one format only; and JPEG at 640 px with its perceptual
 * hash (CRAWL_PERCEPTUAL_HASH). Prints thumbnails a second and their mean size for each; its
 * last line is one JSON object of them.
 */
import os from 'node:os';
import { thumbnail } from '../src/pipeline/analyse';
import { differenceHash } from '../src/pipeline/differenceHash';
import type { ThumbnailFormat } from '../src/pipeline/config';
import { forEachLimit } from '../src/shared/concurrency';
import { makeImageSet } from './images';

const N = Number(process.env.BENCH_IMAGES ?? 96);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CASES: { format: ThumbnailFormat; side: number; dHash?: true }[] = [
  { format: 'jpeg', side: 640 }, { format: 'webp', side: 640 }, { format: 'jpeg', side: 256 }, { format: 'webp', side: 256 },
  { format: 'jpeg', side: 640, dHash: true },
];

async function main(): Promise<void> {
  const images = await makeImageSet(N);
  const concurrency = Math.max(2, os.cpus().length * 2);
  const totals = CASES.map(() => ({ ms: 0, bytes: 0, count: 0 }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, c] of CASES.entries()) {
      const started = performance.now();
      await forEachLimit(images, concurrency, async (img) => {
        const out = await thumbnail(img, { maxPixels: 100_000_000, maxSide: c.side, quality: 80, format: c.format });
        totals[i]!.bytes += out.length;
        if (c.dHash) await differenceHash(out);
      });
      totals[i]!.ms += performance.now() - started;
      totals[i]!.count += images.length;
    }
  }
  const results = CASES.map((c, i) => {
    const t = totals[i]!;
    return { format: c.format, maxSide: c.side, ...(c.dHash ? { dHash: true } : {}), perS: Math.round((t.count / t.ms) * 10_000) / 10, meanBytes: Math.round(t.bytes / t.count) };
  });
  for (const r of results) console.log(`${r.format} ${r.maxSide} px${'dHash' in r ? ' + dHash' : ''}: ${r.perS} thumbnails/s, ${(r.meanBytes / 1024).toFixed(1)} KiB each`);
  console.log(JSON.stringify({ images: N, rounds: ROUNDS, concurrency, results }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
