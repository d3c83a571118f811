import { createHash } from 'node:crypto';

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
export function thumbnailKey(url: string): string {
  const h = urlHash(url);
  return `thumbnails/${h.slice(0, 2)}/${h}.jpg`;
}

/** Record files are keyed by the unit of work that wrote them, so a retry overwrites its own file. */
export function recordKey(source: string, unit: string): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 150);
  return `records/${safe(source)}/${safe(unit)}.ndjson`;
}
