import sharp from 'sharp';
import { decodeWeight } from '../../src/pipeline/decodeMemory';
import { gradient } from '../support/images';

describe('the weight of a thumbnail decode in the worker decode budget (real sharp images)', () => {

  it.each<[string, (s: sharp.Sharp) => sharp.Sharp, 'jpeg' | 'png' | 'gif' | 'webp' | 'avif' | 'tiff', number]>([
    ['a baseline JPEG', (s) => s.jpeg(), 'jpeg', 1],
    ['a progressive JPEG', (s) => s.jpeg({ progressive: true }), 'jpeg', 1],
    // Its coefficients kept whole at ~2.1 bytes a sample: 3 samples a pixel, and 4 in CMYK.
    ['a progressive JPEG without chroma subsampling', (s) => s.jpeg({ progressive: true, chromaSubsampling: '4:4:4' }), 'jpeg', 2.1 * 3 / 4],
    ['a progressive CMYK JPEG', (s) => s.toColourspace('cmyk').jpeg({ progressive: true, chromaSubsampling: '4:4:4' }), 'jpeg', 2.1],
    ['a PNG', (s) => s.png(), 'png', 1],
    ['an interlaced PNG', (s) => s.png({ progressive: true }), 'png', 1.25],
    ['an interlaced 16-bit PNG', (s) => s.toColourspace('rgb16').png({ progressive: true }), 'png', 2.5],
    ['a GIF', (s) => s.gif(), 'gif', 1.4],
    ['a WebP', (s) => s.webp(), 'webp', 1],
    ['a TIFF', (s) => s.tiff(), 'tiff', 1],
    ['an AVIF', (s) => s.avif(), 'avif', 5],
  ])('weighs %s at %p times its pixels', async (_what, encode, format, factor) => {
    const body = await encode(sharp(await gradient(256, 128))).toBuffer();
    expect((await sharp(body).metadata()).width).toBe(256);
    expect(decodeWeight(body, { format, width: 256, height: 128 })).toBe(Math.ceil(factor * 256 * 128));
  });
});
