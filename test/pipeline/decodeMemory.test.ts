import sharp from 'sharp';
import { decodeWeight } from '../../src/pipeline/decodeMemory';
import { gradient } from '../support/images';

describe('the weight of a thumbnail decode in the worker decode budget (real sharp images)', () => {

  it.each<[string, (s: sharp.Sharp) => sharp.Sharp, 'jpeg' | 'png' | 'gif' | 'webp' | 'avif' | 'tiff', number]>([
    ['a baseline JPEG', (s) => s.jpeg(), 'jpeg', 1],
    ['a progressive JPEG', (s) => s.jpeg({ progressive: true }), 'jpeg', 1],
    ['a PNG', (s) => s.png(), 'png', 1],
    ['an interlaced PNG', (s) => s.png({ progressive: true }), 'png', 1.25],
    ['an interlaced 16-bit PNG', (s) => s.toColourspace('rgb16').png({ progressive: true }), 'png', 2.5],
    ['a GIF', (s) => s.gif(), 'gif', 1.4],
    ['a WebP', (s) => s.webp(), 'webp', 1],
    ['a TIFF', (s) => s.tiff(), 'tiff', 1],
    ['an AVIF', (s) => s.avif(), 'avif', 5],
  ])('weighs %s at %p times its pixels', async (_what, encode, format, factor) => {
    const body = await encode(sharp(await gradient(200, 100))).toBuffer();
    expect((await sharp(body).metadata()).width).toBe(200);
    expect(decodeWeight(body, { format, width: 200, height: 100 })).toBe(factor * 20_000);
  });
});
