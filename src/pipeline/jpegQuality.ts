import { jpegSegments } from './jpegStructure';

/**
 * JPEG quality estimated from the quantisation tables, the way ImageMagick's estimate works
 * in spirit: compare the file's luminance table with the IJG/Annex K base table scaled to each
 * quality as libjpeg scales it.
 */

// JPEG Annex K luminance table (order does not matter: only sums are used).
const ANNEX_K_LUMA = [
  16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
  18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
];

/** Reads the quantisation tables (id -> 64 values) from JPEG bytes; stops at the first scan. */
export function readQuantTables(buf: Buffer): Map<number, number[]> {
  const tables = new Map<number, number[]>();
  for (const { marker, start, end } of jpegSegments(buf)) {
    if (marker === 0xda) break;
    if (marker !== 0xdb) continue;
    let q = start;
    while (q < end) {
      const pq = buf[q]! >> 4;
      const id = buf[q]! & 0x0f;
      q += 1;
      const values: number[] = [];
      // A 16-bit entry needs both its bytes inside the segment: a hostile file ends one short.
      for (let i = 0; i < 64 && q + (pq ? 1 : 0) < end; i++) {
        values.push(pq ? buf.readUInt16BE(q) : buf[q]!);
        q += pq ? 2 : 1;
      }
      if (values.length === 64) tables.set(id, values);
    }
  }
  return tables;
}

/**
 * The sum of the Annex K luminance table as libjpeg scales it for `quality`: scale factor
 * 5000/q below 50 and 200-2q from 50, each entry rounded and kept within 1..max (255 in a
 * baseline file, whose tables are 8-bit).
 */
function scaledSum(quality: number, max: number): number {
  const scale = quality < 50 ? Math.floor(5000 / quality) : 200 - quality * 2;
  let sum = 0;
  for (const b of ANNEX_K_LUMA) sum += Math.min(max, Math.max(1, Math.floor((b * scale + 50) / 100)));
  return sum;
}

const SCALED_SUMS = { 255: [0], 32767: [0] } as Record<255 | 32767, number[]>;
for (let q = 1; q <= 100; q++) {
  SCALED_SUMS[255].push(scaledSum(q, 255));
  SCALED_SUMS[32767].push(scaledSum(q, 32767));
}

/**
 * Estimated quality 1-100, or undefined when the bytes carry no usable table. The quality whose
 * libjpeg-scaled table sums closest to the file's luminance table: exact for libjpeg's own
 * encoders (sharp, cjpeg, most cameras' libraries), the nearest equivalent for others. Below
 * quality 20 libjpeg clips entries at 255; inverting the scaling without that clip read
 * quality 1 as 11 and 10 as 15.
 */
export function estimateJpegQuality(buf: Buffer): number | undefined {
  const luma = readQuantTables(buf).get(0);
  if (!luma) return undefined;
  const sum = luma.reduce((a, b) => a + b, 0);
  const sums = SCALED_SUMS[luma.some((v) => v > 255) ? 32767 : 255];
  let best = 100;
  for (let q = 99; q >= 1; q--) if (Math.abs(sums[q]! - sum) < Math.abs(sums[best]! - sum)) best = q;
  return best;
}
