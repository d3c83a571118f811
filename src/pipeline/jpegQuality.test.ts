import { estimateJpegQuality, readQuantTables } from './jpegQuality';

describe('quantisation tables from hostile bytes', () => {
  it('reads nothing from a 16-bit table cut off in the middle of an entry, without throwing', () => {
    // SOI, DQT of length 6: precision 16 bits, table 0, then three bytes: one entry and a half.
    const cut = Buffer.from([0xff, 0xd8, 0xff, 0xdb, 0x00, 0x06, 0x10, 0x01, 0x02, 0x03]);
    expect(readQuantTables(cut).size).toBe(0);
    expect(estimateJpegQuality(cut)).toBeUndefined();
  });

  it('never throws on mutated and truncated headers', () => {
    const table = Array.from({ length: 64 }, (_, i) => 1 + (i % 50));
    const good = Buffer.from([0xff, 0xd8, 0xff, 0xdb, 0x00, 67, 0x00, ...table, 0xff, 0xda, 0x00, 0x02]);
    expect(readQuantTables(good).get(0)).toEqual(table);
    let seed = 11;
    const rnd = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    for (let k = 0; k < 20_000; k++) {
      const b = Buffer.from(good.subarray(0, 2 + Math.floor(rnd() * (good.length - 1))));
      for (let m = 0; m < 3; m++) b[2 + Math.floor(rnd() * (b.length - 2))] = Math.floor(rnd() * 256);
      if (b.length > 6 && rnd() < 0.5) b[6] = 0x10; // 16-bit entries: two bytes each to read
      if (b.length > 5 && rnd() < 0.5) b[5] = b.length - 4; // the segment ends where the bytes do
      expect(() => estimateJpegQuality(b)).not.toThrow();
    }
  });
});
