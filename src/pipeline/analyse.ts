import { createHash } from 'node:crypto';
import sharp from 'sharp';
import type { ThumbnailFormat } from './config';
import { estimateJpegQuality } from './jpegQuality';
import { jpegComplete, jpegDecodeWork, maxBlockPasses } from './jpegStructure';
import { readExifRights } from './exifRights';
import { readIptcRights } from './iptcRights';
import { readXmpRights } from './xmpRights';

export type ImageType = 'jpeg' | 'png' | 'gif' | 'webp' | 'avif' | 'heif' | 'tiff';

export class ContentError extends Error {
  /** `page`: the body was a page (HTML, JSON or text) or nothing where an image was asked for (RequestOutcome.page). */
  constructor(message: string, readonly page = false) {
    super(message);
  }
}

/** The image type from its first bytes; Content-Type is never trusted. */
export function sniffImageType(b: Buffer): ImageType | undefined {
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b.length >= 8 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'png';
  if (b.length >= 6 && (b.toString('latin1', 0, 6) === 'GIF87a' || b.toString('latin1', 0, 6) === 'GIF89a')) return 'gif';
  if (b.length >= 12 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') return 'webp';
  if (b.length >= 12 && b.toString('latin1', 4, 8) === 'ftyp') {
    const brand = b.toString('latin1', 8, 12);
    if (brand === 'avif' || brand === 'avis') return 'avif';
    if (['heic', 'heix', 'mif1', 'msf1', 'hevc'].includes(brand)) return 'heif';
  }
  if (b.length >= 4 && (b.toString('latin1', 0, 4) === 'II*\0' || b.toString('latin1', 0, 4) === 'MM\0*')) return 'tiff';
  return undefined;
}

/**
 * What a body that is not a raster image looks like, for the record's reason: the usual cases
 * (an error page served with 200, an SVG, nothing at all) by name, anything else by its first bytes.
 * `page`: HTML, JSON or text, what a block or login page, an API's error or a page URL answers,
 * or nothing at all, what a firewall that drops a crawler's requests with 200 answers.
 */
export function describeNonImage(b: Buffer): { what: string; page: boolean } {
  if (b.length === 0) return { what: 'empty body', page: true };
  const head = b.subarray(0, 1024).toString('latin1').replace(/^\uFEFF|^\xEF\xBB\xBF/, '').trimStart().toLowerCase();
  if (/^(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*(<!doctype svg[^>]*>\s*)?<svg[\s>]/.test(head)) return { what: 'an SVG (vector) image, which is not analysed', page: false };
  if (head.startsWith('<!doctype html') || head.startsWith('<html') || /^<(head|body|meta|title)[\s>]/.test(head)) return { what: 'an HTML page', page: true };
  const known = OTHER_FORMATS.find(([, is]) => is(b));
  if (known) return { what: known[0], page: false };
  const text = textStart(b);
  if (text !== undefined) return { what: `${/^[[{]/.test(text) ? 'JSON' : 'text'} starting ${JSON.stringify(text)}`, page: true };
  const hex = [...b.subarray(0, 8)].map((x) => x.toString(16).padStart(2, '0')).join(' ');
  return { what: `unrecognised leading bytes (${hex})`, page: false };
}

const startsWith = (b: Buffer, bytes: number[]) => b.length >= bytes.length && bytes.every((x, i) => b[i] === x);

/** Other things image URLs serve, by their first bytes: formats sharp does not read, and mistakes. */
const OTHER_FORMATS: [string, (b: Buffer) => boolean][] = [
  ['a PDF document', (b) => b.toString('latin1', 0, 5) === '%PDF-'],
  ['a JPEG XL image, which is not analysed', (b) => startsWith(b, [0xff, 0x0a]) || startsWith(b, [0, 0, 0, 0x0c, 0x4a, 0x58, 0x4c, 0x20])],
  ['a JPEG 2000 image, which is not analysed', (b) => startsWith(b, [0, 0, 0, 0x0c, 0x6a, 0x50, 0x20, 0x20]) || startsWith(b, [0xff, 0x4f, 0xff, 0x51])],
  // BM, then a header whose size is one of the BMP versions': "BM" alone starts words too.
  ['a BMP image, which is not analysed', (b) => b.length >= 18 && b.toString('latin1', 0, 2) === 'BM' && [12, 40, 52, 56, 64, 108, 124].includes(b.readUInt32LE(14))],
  ['an ICO icon, which is not analysed', (b) => startsWith(b, [0, 0, 1, 0]) && b.length >= 6 && b.readUInt16LE(4) > 0],
  ['a Photoshop document, which is not analysed', (b) => b.toString('latin1', 0, 4) === '8BPS'],
  // Compressed without saying so in Content-Encoding (which the fetcher would have decoded).
  ['gzip-compressed data', (b) => startsWith(b, [0x1f, 0x8b])],
  ['a zip archive', (b) => startsWith(b, [0x50, 0x4b, 0x03, 0x04])],
];

/** The body's first characters when it begins as UTF-8 text (an error message, JSON), else undefined. */
function textStart(b: Buffer): string | undefined {
  const head = b.subarray(0, 256).toString('utf8').replace(/\uFFFD$/, ''); // a character cut at 256 bytes
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\uFFFD]/.test(head)) return undefined;
  const text = head.replace(/^\uFEFF/, '').replace(/\s+/g, ' ').trim();
  return text === '' ? undefined : text.length > 40 ? `${text.slice(0, 40)}...` : text;
}

export interface Analysis {
  format: ImageType;
  /** Display width and height, after EXIF orientation. */
  width: number;
  height: number;
  bytes: number;
  sha256: string;
  jpegQuality: number | null;
  orientation: number | null;
  /** EXIF Artist, else XMP dc:creator, else IPTC By-line. */
  artist: string | null;
  /** EXIF Copyright, else XMP dc:rights, else IPTC Copyright Notice. */
  copyright: string | null;
  /** XMP xmpRights:WebStatement (IPTC's Web Statement of Rights), else its PLUS licensor's URL. */
  licenseUrl: string | null;
}

/** `sha256`: the body's, when the caller has it already (hex). */
export async function analyse(body: Buffer, maxPixels: number, sha256?: string): Promise<Analysis> {
  const format = sniffImageType(body);
  if (!format) {
    const { what, page } = describeNonImage(body);
    throw new ContentError(`not an image: ${what}`, page);
  }
  let meta: sharp.Metadata;
  try {
    // metadata() reads headers only: the pixel cap is checked before anything is decoded.
    meta = await sharp(body, { limitInputPixels: maxPixels, failOn: 'error' }).metadata();
  } catch (err) {
    throw new ContentError(`undecodable ${format}: ${vipsMessage(err)}`);
  }
  const w = meta.width ?? 0;
  const h = meta.height ?? 0;
  if (!w || !h) throw new ContentError(`undecodable ${format}: no dimensions`);
  if (w * h > maxPixels) throw new ContentError(`image of ${w}x${h} pixels exceeds the ${maxPixels}-pixel limit`);
  if (format === 'jpeg') refuseCostlyScans(body);
  const orientation = meta.orientation ?? null;
  const rotated = orientation !== null && orientation >= 5 && orientation <= 8;
  // Broken metadata does not make the image unusable: its fields stay empty.
  const exif = readExifRights(meta.exif);
  // EXIF first (as before the others were read), then XMP, then legacy IPTC-IIM: a tool that
  // writes several writes the same values.
  const xmp = meta.xmp ? readXmpRights(meta.xmpAsString) : undefined;
  const iptc = meta.iptc ? readIptcRights(meta.iptc) : undefined;
  const artist = clean(exif.artist) ?? clean(xmp?.creator) ?? clean(iptc?.byline);
  const copyright = clean(exif.copyright) ?? clean(xmp?.rights) ?? clean(iptc?.copyright);
  return {
    format,
    width: rotated ? h : w,
    height: rotated ? w : h,
    bytes: body.length,
    sha256: sha256 ?? createHash('sha256').update(body).digest('hex'),
    jpegQuality: format === 'jpeg' ? estimateJpegQuality(body) ?? null : null,
    orientation,
    artist,
    copyright,
    licenseUrl: clean(xmp?.licenseUrl),
  };
}

/** Refuses a JPEG whose scans would take the decoder far longer than its pixels (see jpegDecodeWork). */
function refuseCostlyScans(body: Buffer): void {
  const work = jpegDecodeWork(body);
  if (!work || work.blockPasses <= maxBlockPasses(work.blocks)) return;
  throw new ContentError(`JPEG of ${work.width}x${work.height} pixels in ${work.scans} scans: decoding it would take ` +
    `${work.blockPasses.toLocaleString('en-US')} passes over 8x8 blocks (at most ${maxBlockPasses(work.blocks).toLocaleString('en-US')}), ` +
    'the pattern of a progressive-JPEG decompression bomb; not decoded');
}

function clean(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  const s = v.replace(/\0+$/g, '').trim();
  return s === '' ? null : s.slice(0, 500);
}

/**
 * Longest side at most maxSide, never enlarged, EXIF orientation applied, sRGB out: JPEG (a
 * transparent image on white) or WebP (transparency kept).
 */
export async function thumbnail(body: Buffer, opts: { maxPixels: number; maxSide: number; quality: number; format?: ThumbnailFormat }): Promise<Buffer> {
  const type = sniffImageType(body);
  try {
    let image = sharp(body, { limitInputPixels: opts.maxPixels, failOn: 'error' })
      .rotate()
      .resize(opts.maxSide, opts.maxSide, { fit: 'inside', withoutEnlargement: true });
    if (opts.format !== 'webp') image = image.flatten({ background: '#ffffff' });
    if (await processedInP3(body, type, opts.maxPixels)) image = image.withIccProfile('srgb', { attach: false });
    return await (opts.format === 'webp' ? image.webp({ quality: opts.quality }) : image.jpeg({ quality: opts.quality })).toBuffer();
  } catch (err) {
    // libvips keeps one error buffer for all its threads: with several images failing at once, a
    // message can come empty ("Unknown error"), twice, or belong to another image. A JPEG cut
    // short is told from its own bytes, the commonest case; the rest say what libvips said.
    if (type === 'jpeg' && !jpegComplete(body)) throw new ContentError(JPEG_CUT_SHORT);
    const message = vipsMessage(err);
    if (type === 'heif' && NO_DECODER.test(message)) throw new ContentError(HEVC_NOT_DECODED);
    throw new ContentError(`cannot decode for thumbnail: ${message}`);
  }
}

export const JPEG_CUT_SHORT = 'cannot decode for thumbnail: the JPEG is cut short (its bytes end before its end-of-image marker)';

/**
 * sharp's prebuilt libvips reads a HEIC's headers (size, EXIF) but has no HEVC decoder (a
 * patented codec; a libvips built with libde265 has one), so an iPhone photo failed only at its
 * thumbnail, with a reason in libheif's words that differed per file.
 */
const NO_DECODER = /compression format has not been built in|no decoding plugin installed|unsupported codec/i;
export const HEVC_NOT_DECODED = 'a HEIC image (HEVC-coded, as iPhones save photos), which this build of sharp cannot decode: its prebuilt libvips has no HEVC decoder';

/**
 * libvips' error on one line, each line once, without the lines its loaders add while probing
 * ("source: bad seek to 7112", a different offset in each file): reasons are grouped by their text.
 */
function vipsMessage(err: unknown): string {
  const lines = (err instanceof Error ? err.message : String(err)).split('\n')
    .map((l) => l.replace(/\s*source: bad seek to \d+/g, '').replace(/:\s*$/, '').trim())
    .filter((l) => l !== '');
  const message = [...new Set(lines)].join('; ');
  // sharp's words for an empty libvips error buffer (another thread's failure cleared it).
  return message === 'Unknown error' || message === '' ? 'libvips gave no reason' : message;
}

/**
 * Whether sharp will resize this image in Display P3 rather than sRGB. It converts an image that
 * carries an ICC profile (Adobe RGB, P3, ProPhoto, sRGB itself) to sRGB before resizing, except a
 * 16-bit RGB one (a PNG or TIFF from Photoshop or Lightroom), which it converts to P3 to keep its
 * gamut and then writes into the 8-bit JPEG with no profile: such thumbnails came out washed out
 * (pure red as 234,51,35). Those alone get converted to sRGB at the end; doing it for every image
 * cost ~5 of ~14 ms per thumbnail (a transform from sRGB to itself). JPEG, WebP and GIF decode to
 * 8 bits and need no header read.
 */
async function processedInP3(body: Buffer, type: ImageType | undefined, maxPixels: number): Promise<boolean> {
  if (type === 'jpeg' || type === 'webp' || type === 'gif') return false;
  const meta = await sharp(body, { limitInputPixels: maxPixels, failOn: 'error' }).metadata().catch(() => undefined);
  return meta?.space === 'rgb16' && meta.hasProfile === true;
}
