import os from 'node:os';
import sharp from 'sharp';
import { analyse, thumbnail } from '../src/pipeline/analyse';
import { forEachLimit } from '../src/shared/concurrency';

/** A varied, reproducible image set: photo-like JPEGs of several sizes and qualities. */
export async function makeImageSet(count: number): Promise<Buffer[]> {
  const distinct = Math.min(count, 24);
  const base: Buffer[] = [];
  for (let i = 0; i < distinct; i++) {
    const w = 800 + (i % 4) * 400;
    const h = 600 + (i % 3) * 300;
    const noise = await sharp({ create: { width: w, height: h, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
      .blur(2 + (i % 3))
      .jpeg({ quality: 70 + (i % 3) * 10 })
      .toBuffer();
    base.push(noise);
  }
  return Array.from({ length: count }, (_, i) => base[i % distinct]!);
}

/** Sharp alone on the same work the pipeline does per image: analyse + thumbnail. */
export async function sharpAlone(images: Buffer[], maxPixels = 100_000_000): Promise<number> {
  const concurrency = Math.max(2, os.cpus().length * 2);
  const started = performance.now();
  await forEachLimit(images, concurrency, async (img) => {
    await analyse(img, maxPixels);
    await thumbnail(img, { maxPixels, maxSide: 640, quality: 80 });
  });
  return images.length / ((performance.now() - started) / 1000);
}
