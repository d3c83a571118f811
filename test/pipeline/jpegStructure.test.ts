import sharp from 'sharp';
import { jpegDecodeWork, jpegSegments, maxBlockPasses } from '../../src/pipeline/jpegStructure';
import { gradient, jpeg, scanBombJpeg } from '../support/images';

describe('the decode work a JPEG promises (read from its headers, nothing decoded)', () => {
  it('counts one scan over every block of a baseline JPEG, chroma subsampled', async () => {
    // 4:2:0: 100x75 luma blocks, 50x38 for each chroma component.
    expect(jpegDecodeWork(await jpeg(800, 600))).toEqual({ width: 800, height: 600, progressive: false, scans: 1, blocks: 7500 + 2 * 1900, blockPasses: 7500 + 2 * 1900 });
  });

  it('finds a usual progressive JPEG well within its limit', async () => {
    const w = jpegDecodeWork(await sharp(await gradient(800, 600)).jpeg({ progressive: true }).toBuffer())!;
    expect(w.scans).toBe(10); // libjpeg's own progression
    expect(w.blockPasses / w.blocks).toBeGreaterThan(4);
    expect(w.blockPasses / w.blocks).toBeLessThan(6);
    expect(w.blockPasses).toBeLessThanOrEqual(maxBlockPasses(w.blocks));
  });

  it('finds every scan of a scan bomb, far over its limit', () => {
    const w = jpegDecodeWork(scanBombJpeg(9984))!;
    expect(w).toEqual({ width: 9984, height: 9984, progressive: true, scans: 883, blocks: 1248 * 1248, blockPasses: 883 * 1248 * 1248 });
    expect(w.blockPasses).toBeGreaterThan(5 * maxBlockPasses(w.blocks));
  });

  it('passes over entropy-coded data: stuffed 0xFF bytes and restart markers are no segments', () => {
    const sof = [0xff, 0xc2, 0, 11, 8, 0, 16, 0, 16, 1, 1, 0x11, 0];
    const sos = [0xff, 0xda, 0, 8, 1, 1, 0, 0, 63, 0];
    const data = [0x12, 0xff, 0x00, 0xff, 0xd0, 0xff, 0xff, 0xd1, 0x34];
    const file = Buffer.from([0xff, 0xd8, ...sof, ...sos, ...data, ...sos, ...data, 0xff, 0xd9, ...sos]);
    expect([...jpegSegments(file)].map((s) => s.marker)).toEqual([0xc2, 0xda, 0xda]);
    expect(jpegDecodeWork(file)).toEqual({ width: 16, height: 16, progressive: true, scans: 2, blocks: 4, blockPasses: 8 });
    // Sequential (SOF0): each block is decoded once whatever scans follow, so reading stops at the first.
    file[3] = 0xc0;
    expect(jpegDecodeWork(file)).toEqual({ width: 16, height: 16, progressive: false, scans: 1, blocks: 4, blockPasses: 4 });
  });

  it('reads nothing without a frame header, and never throws on cut or mutated bytes', () => {
    expect(jpegDecodeWork(Buffer.from([0xff, 0xd8, 0xff, 0xd9]))).toBeUndefined();
    expect(jpegDecodeWork(Buffer.from('not a jpeg'))).toBeUndefined();
    const bomb = scanBombJpeg(64);
    let seed = 7;
    const rnd = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    for (let k = 0; k < 5_000; k++) {
      const b = Buffer.from(bomb.subarray(0, 2 + Math.floor(rnd() * (bomb.length - 1))));
      for (let m = 0; m < 3; m++) b[2 + Math.floor(rnd() * Math.min(200, b.length - 2))] = Math.floor(rnd() * 256);
      const w = jpegDecodeWork(b);
      if (w) expect(Number.isFinite(w.blockPasses)).toBe(true);
    }
  });
});
