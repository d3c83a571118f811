import zlib from 'node:zlib';
import sharp from 'sharp';

/** Real images made by sharp, so tests need no binary fixtures in the repo. */

export function gradient(width: number, height: number): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      raw[i] = (x * 255) / width;
      raw[i + 1] = (y * 255) / height;
      raw[i + 2] = ((x + y) * 7) % 256;
    }
  }
  return sharp(raw, { raw: { width, height, channels: 3 } }).png().toBuffer();
}

/**
 * A picture with shapes at every scale (a few waves of its own per seed), as PNG: what a perceptual
 * hash tells apart, where a gradient or noise gives it nothing or everything to go by.
 */
export function scene(width: number, height: number, seed: number): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3);
  const f = [1 + (seed % 5), 2 + ((seed * 7) % 5), 1 + ((seed * 3) % 4)];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const u = x / width;
      const v = y / height;
      const i = (y * width + x) * 3;
      raw[i] = 128 + 120 * Math.sin(2 * Math.PI * (f[0]! * u + seed / 3));
      raw[i + 1] = 128 + 120 * Math.sin(2 * Math.PI * (f[1]! * v + f[2]! * u));
      raw[i + 2] = 128 + 120 * Math.cos(2 * Math.PI * (f[2]! * (u + v) + seed / 7));
    }
  }
  return sharp(raw, { raw: { width, height, channels: 3 } }).png().toBuffer();
}

export async function jpeg(width: number, height: number, quality = 85): Promise<Buffer> {
  return sharp(await gradient(width, height)).jpeg({ quality }).toBuffer();
}

export async function png(width: number, height: number): Promise<Buffer> {
  return gradient(width, height);
}

/** A 400x200 JPEG whose EXIF says "rotate 90": it displays as 200x400. */
export async function rotatedJpeg(): Promise<Buffer> {
  return sharp(await gradient(400, 200))
    .withMetadata({ orientation: 6 })
    .withExif({ IFD0: { Artist: 'Ada Lovelace', Copyright: 'CC BY 4.0' } })
    .jpeg({ quality: 80 })
    .toBuffer();
}

/** A JPEG with rights in XMP as photo tools write them, and EXIF Artist/Copyright only when given. */
export async function xmpJpeg(exif?: { Artist?: string; Copyright?: string }): Promise<Buffer> {
  const xmp = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
    <rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:xmpRights="http://ns.adobe.com/xap/1.0/rights/"
      xmpRights:Marked="True" xmpRights:WebStatement="https://photos.example/license">
      <dc:creator><rdf:Seq><rdf:li>Grace Hopper</rdf:li></rdf:Seq></dc:creator>
      <dc:rights><rdf:Alt><rdf:li xml:lang="x-default">© 2026 Grace Hopper, CC BY-SA 4.0</rdf:li></rdf:Alt></dc:rights>
    </rdf:Description></rdf:RDF></x:xmpmeta>`;
  const img = sharp(await gradient(120, 80)).withXmp(xmp);
  return (exif ? img.withExif({ IFD0: exif }) : img).jpeg({ quality: 80 }).toBuffer();
}

/** A JPEG with a Photoshop APP13 segment holding IPTC-IIM By-line and Copyright Notice only. */
export async function iptcJpeg(): Promise<Buffer> {
  const dataset = (id: number, value: string) => {
    const v = Buffer.from(value, 'utf8');
    return Buffer.concat([Buffer.from([0x1c, 2, id, v.length >> 8, v.length & 0xff]), v]);
  };
  const iim = Buffer.concat([Buffer.from([0x1c, 1, 90, 0, 3, 0x1b, 0x25, 0x47]), dataset(80, 'Dorothea Lange'), dataset(116, 'Library of Congress, no known restrictions')]);
  const size = Buffer.alloc(4);
  size.writeUInt32BE(iim.length);
  const payload = Buffer.concat([Buffer.from('Photoshop 3.0\0', 'latin1'), Buffer.from('8BIM'), Buffer.from([0x04, 0x04, 0, 0]), size, iim, Buffer.alloc(iim.length % 2)]);
  const segment = Buffer.concat([Buffer.from([0xff, 0xed, (payload.length + 2) >> 8, (payload.length + 2) & 0xff]), payload]);
  const plain = await sharp(await gradient(120, 80)).jpeg({ quality: 80 }).toBuffer();
  return Buffer.concat([plain.subarray(0, 2), segment, plain.subarray(2)]);
}

/**
 * A JPEG whose EXIF block (60 KB, as much as a segment holds) has 5,000 entries each claiming a
 * 4-billion-byte value at the same offset: exif-reader took 26 s and ~3 GB on it.
 */
export async function exifBombJpeg(): Promise<Buffer> {
  const entries = 5_000;
  const tiff = Buffer.alloc(8 + 2 + entries * 12 + 4);
  tiff.write('II', 0, 'latin1');
  tiff.writeUInt16LE(0x2a, 2);
  tiff.writeUInt32LE(8, 4);
  tiff.writeUInt16LE(entries, 8);
  for (let i = 0; i < entries; i++) {
    const at = 10 + i * 12;
    tiff.writeUInt16LE(i % 2 ? 0x013b : 0x9000 + i, at);
    tiff.writeUInt16LE(1, at + 2);
    tiff.writeUInt32LE(0xffffffff, at + 4);
    tiff.writeUInt32LE(0, at + 8);
  }
  const payload = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), tiff]);
  const segment = Buffer.concat([Buffer.from([0xff, 0xe1, (payload.length + 2) >> 8, (payload.length + 2) & 0xff]), payload]);
  const plain = await sharp(await gradient(64, 48)).jpeg({ quality: 80 }).toBuffer();
  return Buffer.concat([plain.subarray(0, 2), segment, plain.subarray(2)]);
}

function crc32(buf: Buffer): number {
  let c = ~0;
  for (const b of buf) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return ~c >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

/** A small PNG whose header claims 30000x30000 pixels: a decompression bomb. */
export function bombPng(side = 30_000): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(side, 0);
  ihdr.writeUInt32BE(side, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const idat = zlib.deflateSync(Buffer.alloc(side + 1)); // one row's worth; the rest "compresses away"
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr), chunk('IDAT', idat), chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** Bits written MSB first, with JPEG's 0x00 stuffed after each 0xFF byte. */
class EntropyBits {
  private bytes: number[] = [];
  private acc = 0;
  private n = 0;

  put(value: number, length: number): void {
    for (let i = length - 1; i >= 0; i--) {
      this.acc = (this.acc << 1) | ((value >> i) & 1);
      if (++this.n === 8) {
        this.bytes.push(this.acc);
        if (this.acc === 0xff) this.bytes.push(0);
        this.acc = 0;
        this.n = 0;
      }
    }
  }

  /** Pads the last byte with 1-bits, as the standard asks. */
  end(): Buffer {
    while (this.n !== 0) this.put(1, 1);
    return Buffer.from(this.bytes);
  }
}

/**
 * A valid progressive greyscale JPEG of side x side pixels, all coefficients zero, in as many
 * scans as the standard allows one component (a DC scan, then each AC coefficient on its own in
 * 14 successive-approximation scans: 883), each AC scan a few end-of-band runs over every
 * block: libjpeg-turbo's LJT-01-003. At 9984 pixels, 350 KB took sharp 24 s of CPU to decode.
 */
export function scanBombJpeg(side: number): Buffer {
  const blocks = Math.ceil(side / 8) ** 2;
  const parts: Buffer[] = [Buffer.from([0xff, 0xd8])];
  const segment = (marker: number, body: number[]) => {
    parts.push(Buffer.from([0xff, marker, (body.length + 2) >> 8, (body.length + 2) & 0xff, ...body]));
  };
  segment(0xdb, [0, ...new Array<number>(64).fill(1)]);
  segment(0xc2, [8, side >> 8, side & 0xff, side >> 8, side & 0xff, 1, 1, 0x11, 0]);
  // DC table 0: one code (length 1) for difference category 0. AC table 0: the 15 end-of-band
  // run symbols (r << 4), 4 bits each.
  const dcCounts = new Array<number>(16).fill(0);
  dcCounts[0] = 1;
  const acCounts = new Array<number>(16).fill(0);
  acCounts[3] = 15;
  segment(0xc4, [0x00, ...dcCounts, 0, 0x10, ...acCounts, ...Array.from({ length: 15 }, (_, r) => r << 4)]);
  const scan = (ss: number, se: number, ah: number, al: number, data: Buffer) => {
    segment(0xda, [1, 1, 0x00, ss, se, (ah << 4) | al]);
    parts.push(data);
  };
  const dc = new EntropyBits();
  for (let i = 0; i < blocks; i++) dc.put(0, 1);
  scan(0, 0, 0, 0, dc.end());
  const runs = new EntropyBits();
  for (let left = blocks; left > 0;) {
    const run = Math.min(left, 32767);
    const r = Math.floor(Math.log2(run));
    runs.put(r, 4);
    runs.put(run - (1 << r), r);
    left -= run;
  }
  const ac = runs.end();
  for (let k = 1; k <= 63; k++) {
    scan(k, k, 0, 13, ac);
    for (let ah = 13; ah >= 1; ah--) scan(k, k, ah, ah - 1, ac);
  }
  parts.push(Buffer.from([0xff, 0xd9]));
  return Buffer.concat(parts);
}

/** An ISO BMFF box: size, type, then its content (a full box's version and flags included). */
function box(type: string, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + body.length);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, body]);
}

const u8 = (...v: number[]) => Buffer.from(v);
const u16 = (v: number) => { const b = Buffer.alloc(2); b.writeUInt16BE(v); return b; };
const u32 = (v: number) => { const b = Buffer.alloc(4); b.writeUInt32BE(v); return b; };
const fullBox = (type: string, version: number, ...content: Buffer[]) => box(type, u32(version << 24), ...content);

/**
 * A HEIC file as an iPhone saves one, as far as its headers go: one HEVC-coded image item of
 * width x height (hvcC, ispe) whose coded data is a few meaningless bytes. A reader without an
 * HEVC decoder (sharp's prebuilt libvips) reads its size and fails at decoding, as with a real one.
 */
export function hevcHeic(width: number, height: number): Buffer {
  const ftyp = box('ftyp', Buffer.from('heic'), u32(0), Buffer.from('mif1heic'));
  // HEVCDecoderConfigurationRecord: Main profile, level 3, 4:2:0, 8 bits, 4-byte NAL lengths, no parameter sets.
  const hvcC = box('hvcC', u8(1, 0x01), u32(0x60000000), u8(0x90, 0, 0, 0, 0, 0), u8(90), u8(0xf0, 0), u8(0xfc, 0xfd, 0xf8, 0xf8), u16(0), u8(0x0f), u8(0));
  const ispe = fullBox('ispe', 0, u32(width), u32(height));
  const meta = (mdatOffset: number) => fullBox('meta', 0,
    fullBox('hdlr', 0, u32(0), Buffer.from('pict'), Buffer.alloc(12), u8(0)),
    fullBox('pitm', 0, u16(1)),
    fullBox('iinf', 0, u16(1), fullBox('infe', 2, u16(1), u16(0), Buffer.from('hvc1'), u8(0))),
    box('iprp', box('ipco', hvcC, ispe), fullBox('ipma', 0, u32(1), u16(1), u8(2, 0x81, 0x02))),
    // Offsets and lengths of 4 bytes, no base offset: one extent, the mdat's payload.
    fullBox('iloc', 0, u8(0x44, 0x00), u16(1), u16(1), u16(0), u16(1), u32(mdatOffset), u32(16)));
  const payloadAt = ftyp.length + meta(0).length + 8;
  return Buffer.concat([ftyp, meta(payloadAt), box('mdat', u32(12), Buffer.alloc(12, 0x26))]);
}
