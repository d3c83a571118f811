import { metadataText } from './metadataText';

/**
 * EXIF Artist and Copyright, read from the first IFD of the EXIF block sharp extracts.
 *
 * Not exif-reader, which this replaced: it reads every tag of five IFDs into arrays, and a
 * crafted 60 KB block (5,000 entries each claiming a 4-billion-byte array at the same offset)
 * kept the worker's main thread for 26 s and took ~3 GB of memory. Two tags of one IFD need
 * none of that: this reads at most one directory and two values, each within the block.
 */
export interface ExifRights {
  artist: string | null;
  copyright: string | null;
}

const NONE: ExifRights = { artist: null, copyright: null };
const ARTIST = 0x013b;
const COPYRIGHT = 0x8298;
/** Value types an ASCII field may be written with: ASCII, BYTE and UNDEFINED (all 1 byte). */
const ONE_BYTE_TYPES = new Set([1, 2, 7]);
const EXIF_HEADER = Buffer.from('Exif\0\0', 'latin1');
/** A record keeps 500 characters of each; this is room for any encoding of them. */
const MAX_VALUE_BYTES = 4096;

export function readExifRights(block: Buffer | undefined): ExifRights {
  if (!block) return NONE;
  // TIFF offsets count from the byte-order mark, after the APP1 header when there is one.
  const base = block.subarray(0, EXIF_HEADER.length).equals(EXIF_HEADER) ? EXIF_HEADER.length : 0;
  const tiff = block.subarray(base);
  if (tiff.length < 8) return NONE;
  const order = tiff.toString('latin1', 0, 2);
  if (order !== 'II' && order !== 'MM') return NONE;
  const le = order === 'II';
  const u16 = (at: number) => (le ? tiff.readUInt16LE(at) : tiff.readUInt16BE(at));
  const u32 = (at: number) => (le ? tiff.readUInt32LE(at) : tiff.readUInt32BE(at));
  if (u16(2) !== 0x2a) return NONE;
  const ifd = u32(4);
  if (ifd < 8 || ifd + 2 > tiff.length) return NONE;
  // Entries past the end of the block are not there, whatever the count says.
  const entries = Math.min(u16(ifd), Math.floor((tiff.length - ifd - 2) / 12));
  const found: ExifRights = { artist: null, copyright: null };
  for (let k = 0; k < entries; k++) {
    const at = ifd + 2 + k * 12;
    const tag = u16(at);
    const field = tag === ARTIST ? 'artist' : tag === COPYRIGHT ? 'copyright' : undefined;
    // The first of each only: a block repeating a tag thousands of times decodes it once.
    if (!field || found[field] !== null || !ONE_BYTE_TYPES.has(u16(at + 2))) continue;
    const count = u32(at + 4);
    const start = count <= 4 ? at + 8 : u32(at + 8);
    if (start >= tiff.length) continue;
    found[field] = text(tiff.subarray(start, Math.min(tiff.length, start + count, start + MAX_VALUE_BYTES)));
  }
  return found;
}

/** NUL-terminated text; Copyright may hold two parts, photographer's and editor's, NUL-separated. */
function text(bytes: Buffer): string | null {
  const parts = metadataText(bytes).split('\0').map((p) => p.trim()).filter((p) => p !== '');
  return parts.length > 0 ? parts.join('; ') : null;
}
