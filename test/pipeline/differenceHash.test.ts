import sharp from 'sharp';
import { thumbnail } from '../../src/pipeline/analyse';
import { differenceHash, hashDistance } from '../../src/pipeline/differenceHash';
import { scene } from '../support/images';

describe('the perceptual hash (dHash) of an image, from its thumbnail (real sharp)', () => {
  const thumb = (body: Buffer, format: 'jpeg' | 'webp' = 'jpeg', maxSide = 640) => thumbnail(body, { maxPixels: 50_000_000, maxSide, quality: 80, format });
  const hashOf = async (body: Buffer, format?: 'jpeg' | 'webp', maxSide?: number) => differenceHash(await thumb(body, format, maxSide));

  it('gives the same picture saved again at another size, quality or thumbnail format a hash within a few bits', async () => {
    const original = await scene(1200, 900, 1);
    const hash = await hashOf(original);
    expect(hash).toMatch(/^[0-9a-f]{16}$/);
    const copies = [
      await sharp(original).resize(400).jpeg({ quality: 40 }).toBuffer(),
      await sharp(original).jpeg({ quality: 95 }).toBuffer(),
      await sharp(original).webp({ quality: 50 }).toBuffer(),
    ];
    for (const copy of copies) expect(hashDistance(await hashOf(copy), hash)).toBeLessThanOrEqual(4);
    expect(hashDistance(await hashOf(original, 'webp', 256), hash)).toBeLessThanOrEqual(4);
  });

  it('tells different pictures apart by many bits', async () => {
    const hashes = await Promise.all([1, 2, 3, 4].map(async (seed) => hashOf(await scene(800, 600, seed))));
    for (let i = 0; i < hashes.length; i += 1) {
      for (let j = i + 1; j < hashes.length; j += 1) expect(hashDistance(hashes[i]!, hashes[j]!)).toBeGreaterThanOrEqual(12);
    }
  });

  it('hashes a photo turned by its EXIF orientation as the upright picture, and a mirrored one differently', async () => {
    const upright = await scene(600, 800, 2);
    // Stored lying on its side, with EXIF saying "rotate 90 clockwise" (6) to show it upright.
    const lying = await sharp(upright).rotate(-90).withMetadata({ orientation: 6 }).jpeg({ quality: 90 }).toBuffer();
    expect(hashDistance(await hashOf(lying), await hashOf(upright))).toBeLessThanOrEqual(4);
    expect(hashDistance(await hashOf(await sharp(upright).flop().toBuffer()), await hashOf(upright))).toBeGreaterThanOrEqual(12);
  });

  it('counts the bits two hashes differ in', () => {
    expect(hashDistance('0000000000000000', '0000000000000000')).toBe(0);
    expect(hashDistance('ffffffffffffffff', '0000000000000000')).toBe(64);
    expect(hashDistance('8000000000000001', '0000000000000000')).toBe(2);
  });
});
