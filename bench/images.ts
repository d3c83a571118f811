import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { analyse, thumbnail } from '../src/pipeline/analyse';
import { forEachLimit } from '../src/shared/concurrency';

/** How many different images makeImageSet makes; image i is image i % DISTINCT_IMAGES. */
export const DISTINCT_IMAGES = 24;

/**
 * The files a bench origin serves: the distinct images only. The origin answers /<dir>/<n>.jpg
 * with file n modulo the number of files (src/demo/originProcess.ts), which is image n.
 */
export function writeSiteFiles(dir: string, images: Buffer[]): void {
  images.slice(0, DISTINCT_IMAGES).forEach((b, i) => fs.writeFileSync(path.join(dir, `${i}.jpg`), b));
}

/** A varied, reproducible image set: photo-like JPEGs of several sizes and qualities. */
export async function makeImageSet(count: number): Promise<Buffer[]> {
  const distinct = Math.min(count, DISTINCT_IMAGES);
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

/** Sharp alone on the same work the pipeline does per image by default: analyse + thumbnail. */
export async function sharpAlone(images: Buffer[], maxPixels = 100_000_000): Promise<number> {
  const concurrency = Math.max(2, os.cpus().length * 2);
  const started = performance.now();
  await forEachLimit(images, concurrency, async (img) => {
    await analyse(img, maxPixels);
    await thumbnail(img, { maxPixels, maxSide: 640, quality: 80 });
  });
  return images.length / ((performance.now() - started) / 1000);
}
