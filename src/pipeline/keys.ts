import { createHash } from 'node:crypto';

/** Idempotent keys derived from the URL: a re-run overwrites, never duplicates. */
export function urlHash(url: string): string {
  return createHash('sha256').update(url).digest('hex');
}

export function thumbnailKey(url: string): string {
  const h = urlHash(url);
  return `thumbnails/${h.slice(0, 2)}/${h.slice(2, 4)}/${h}.jpg`;
}

/** Record files are keyed by the unit of work that wrote them, so a retry overwrites its own file. */
export function recordKey(source: string, unit: string): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 150);
  return `records/${safe(source)}/${safe(unit)}.ndjson`;
}
