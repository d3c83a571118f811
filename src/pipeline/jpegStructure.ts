/**
 * A JPEG's marker segments, read without decoding, and what they say about the work a decode
 * will take.
 */

export interface JpegSegment {
  marker: number;
  /** The payload's bounds: after the 2-byte length, up to the segment's end. */
  start: number;
  end: number;
}

/**
 * The marker segments of a JPEG in order, the entropy-coded data after each scan header passed
 * over (its 0xFF00 stuffing and restart markers are not segments). Ends at EOI, at the first
 * segment whose length runs past the bytes, or at the end of the bytes: a truncated file yields
 * what it has. Returns whether it reached EOI.
 */
export function* jpegSegments(buf: Buffer): Generator<JpegSegment, boolean> {
  if (buf.length < 4 || buf[0] !== 0xff || buf[1] !== 0xd8) return false;
  let p = 2;
  while (p + 1 < buf.length) {
    if (buf[p] !== 0xff) {
      // Entropy-coded data holds a 0xFF only before a marker or a stuffed 0x00.
      p = buf.indexOf(0xff, p);
      if (p < 0) return false;
      continue;
    }
    const marker = buf[p + 1]!;
    // Fill bytes, stuffing, and the markers that have no length.
    if (marker === 0xff) { p++; continue; }
    if (marker === 0x00 || marker === 0x01 || marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7)) { p += 2; continue; }
    if (marker === 0xd9) return true;
    if (p + 4 > buf.length) return false;
    const end = p + 2 + buf.readUInt16BE(p + 2);
    if (end < p + 4 || end > buf.length) return false;
    yield { marker, start: p + 4, end };
    p = end;
  }
  return false;
}

/** Whether a JPEG's bytes reach its end-of-image marker: a file cut short does not. */
export function jpegComplete(buf: Buffer): boolean {
  const segments = jpegSegments(buf);
  let step = segments.next();
  while (!step.done) step = segments.next();
  return step.value;
}

/** SOF2, SOF6, SOF10, SOF14: progressive, Huffman or arithmetic coded, with or without hierarchy. */
const PROGRESSIVE_FRAMES = new Set([0xc2, 0xc6, 0xca, 0xce]);

export interface JpegDecodeWork {
  width: number;
  height: number;
  progressive: boolean;
  /**
   * Scans (SOS segments): all of a progressive JPEG's, ~10 in a usual one. A sequential JPEG
   * decodes each block once however its scans are split, so it is read up to its first scan only.
   */
  scans: number;
  /** 8x8 blocks of all components. */
  blocks: number;
  /** The blocks each scan covers, summed over the scans: what entropy decoding walks through. */
  blockPasses: number;
}

export interface JpegFrame {
  width: number;
  height: number;
  progressive: boolean;
  /** Component id -> its 8x8 blocks. */
  blocks: Map<number, number>;
  /** 8x8 blocks of all components. */
  total: number;
}

/** The frame header's size, coding and blocks per component. */
function readFrame(buf: Buffer, s: JpegSegment): JpegFrame {
  const height = buf.readUInt16BE(s.start + 1);
  const width = buf.readUInt16BE(s.start + 3);
  const count = buf[s.start + 5]!;
  const comps: { id: number; h: number; v: number }[] = [];
  for (let i = 0, at = s.start + 6; i < count && at + 3 <= s.end; i++, at += 3) {
    comps.push({ id: buf[at]!, h: Math.max(1, buf[at + 1]! >> 4), v: Math.max(1, buf[at + 1]! & 15) });
  }
  const hMax = Math.max(1, ...comps.map((c) => c.h));
  const vMax = Math.max(1, ...comps.map((c) => c.v));
  const blocks = new Map<number, number>();
  let total = 0;
  for (const c of comps) {
    const n = Math.ceil(Math.ceil((width * c.h) / hMax) / 8) * Math.ceil(Math.ceil((height * c.v) / vMax) / 8);
    blocks.set(c.id, n);
    total += n;
  }
  return { width, height, progressive: PROGRESSIVE_FRAMES.has(s.marker), blocks, total };
}

/** A start-of-frame segment (C0-CF but DHT C4, JPG C8 and DAC CC) long enough to read. */
function isReadableFrame(s: JpegSegment): boolean {
  const m = s.marker;
  return m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc && s.end - s.start >= 6;
}

/** The JPEG's frame header, or undefined without one; reads no further. */
export function jpegFrame(buf: Buffer): JpegFrame | undefined {
  for (const s of jpegSegments(buf)) if (isReadableFrame(s)) return readFrame(buf, s);
  return undefined;
}

/**
 * The decode work a JPEG's headers promise, or undefined without a frame header. A progressive
 * JPEG can hold hundreds of scans that each cover every block of a large image in a few bytes
 * (one end-of-band run), and the decoder walks every block in every scan before it produces a
 * pixel: 350 KB of them took 24 s of CPU in sharp, which no timeout interrupts.
 */
export function jpegDecodeWork(buf: Buffer): JpegDecodeWork | undefined {
  let frame: JpegFrame | undefined;
  let scans = 0;
  let blockPasses = 0;
  for (const s of jpegSegments(buf)) {
    if (!frame && isReadableFrame(s)) {
      frame = readFrame(buf, s);
    } else if (s.marker === 0xda && frame && s.end > s.start) {
      scans++;
      const count = buf[s.start]!;
      for (let i = 0, at = s.start + 1; i < count && at < s.end; i++, at += 2) blockPasses += frame.blocks.get(buf[at]!) ?? 0;
      if (!frame.progressive) return { width: frame.width, height: frame.height, progressive: false, scans, blocks: frame.total, blockPasses: frame.total };
    }
  }
  return frame && { width: frame.width, height: frame.height, progressive: frame.progressive, scans, blocks: frame.total, blockPasses };
}

/**
 * Block passes a JPEG may take: 20 passes over its blocks on average (a usual progressive file
 * takes 4-6 per component), and at least 200 million, ~3 s of CPU at the ~17 ns a pass over an
 * empty block took here, so that small images are never refused for their scans. A 9984x9984
 * file of 883 scans takes 1.4 billion.
 */
export function maxBlockPasses(blocks: number): number {
  return Math.max(200_000_000, 20 * blocks);
}
