import { createHash } from 'node:crypto';
import type { RecordFile } from '../shared/recordUnits';
import type { ImageType } from './analyse';
import type { ThumbnailFormat } from './config';

/** Idempotent keys derived from the URL: a re-run overwrites, never duplicates. */
export function urlHash(url: string): string {
  return createHash('sha256').update(url).digest('hex');
}

/**
 * One level of 256 directories, as git does for its objects: millions of thumbnails stay a few
 * thousand per directory, and the local store stops creating directories after its first few
 * hundred images (two levels, 65,536 directories, made nearly every image of a crawl's first
 * hundred thousand pay for a mkdir: ~0.7 ms of CPU each, measured).
 */
export function thumbnailKey(url: string, format: ThumbnailFormat = 'jpeg'): string {
  const h = urlHash(url);
  return `thumbnails/${h.slice(0, 2)}/${h}.${format === 'webp' ? 'webp' : 'jpg'}`;
}

const ORIGINAL_EXTENSIONS: Record<ImageType, string> = { jpeg: 'jpg', png: 'png', gif: 'gif', webp: 'webp', avif: 'avif', heif: 'heic', tiff: 'tif' };
const ORIGINAL_TYPES: Record<ImageType, string> = {
  jpeg: 'image/jpeg', png: 'image/png', gif: 'image/gif', webp: 'image/webp', avif: 'image/avif', heif: 'image/heic', tiff: 'image/tiff',
};

/**
 * An image's own bytes are keyed by their sha256 (the record's), not by the URL: the same
 * image under many URLs (a placeholder, a photo on several pages) is one object, and a key
 * names its content for whoever loads it. The extension is the format read from the bytes.
 */
export function originalKey(sha256: string, format: ImageType): { key: string; contentType: string } {
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`not a sha256: ${JSON.stringify(sha256)}`);
  return { key: `originals/${sha256.slice(0, 2)}/${sha256}.${ORIGINAL_EXTENSIONS[format]}`, contentType: ORIGINAL_TYPES[format] };
}

const SAFE_SEGMENT = /^[A-Za-z0-9._-]{1,150}$/;
const underscored = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, '_');

/**
 * A source's name as one segment of a key: the name itself when it is made of letters, digits,
 * '.', '_' and '-' only, else its readable part, '~' and a hash of the exact name. Replacing
 * the other characters alone gave "a b" and "a_b" the same chunk files and record directory, so
 * one source's URLs and records overwrote the other's; no safe name contains '~'.
 */
export function sourceSegment(source: string): string {
  if (SAFE_SEGMENT.test(source) && source !== '.' && source !== '..') return source;
  return `${underscored(source).slice(0, 120)}~${createHash('sha256').update(source).digest('hex').slice(0, 12)}`;
}

/**
 * Record files are keyed by the unit of work that wrote them, so a retry overwrites its own
 * file. A unit longer than 150 characters keeps its first 120 and gets a hash of the whole:
 * cutting it off alone made every grant of a source with a long name write the same file.
 */
export function recordKey(source: string, unit: RecordFile): string {
  if (typeof unit !== 'string') return `records/${sourceSegment(source)}/${sourceSegment(unit.chunkId)}/${unit.run}-${unit.part}.ndjson`;
  const u = underscored(unit);
  const segment = u.length <= 150 ? u : `${u.slice(0, 120)}~${createHash('sha256').update(unit).digest('hex').slice(0, 12)}`;
  return `records/${sourceSegment(source)}/${segment}.ndjson`;
}

/** Every record file of every run of a chunk's batch (see RecordUnit): list under `prefix`, keep keys whose rest matches `rest`. */
export function chunkRecordFiles(source: string, chunkId: string): { prefix: string; rest: RegExp } {
  return chunkRecordFilesIn(sourceSegment(source), chunkId);
}

/** chunkRecordFiles() for a source known by its key segment (see sourceSegment). */
export function chunkRecordFilesIn(segment: string, chunkId: string): { prefix: string; rest: RegExp } {
  return { prefix: `records/${segment}/${sourceSegment(chunkId)}/`, rest: /^[0-9a-f]{12}-g\d+(-failed)?\.ndjson$/ };
}
