import { checkManifest, readManifest } from './manifest';
import { fingerprint53, SeenUrls } from '../shared/seenUrls';

/**
 * Records joined to the lines of the manifest that asked for them (`crawl export --manifest`):
 * each record of one of the manifest's URLs gets `manifest: {line, ...the line's own fields}` (an
 * `id` column, a title, whatever the user's export carried), so that results go back to the
 * user's rows without writing URLs the way the crawl wrote them. A record's `url` is the URL as
 * the manifest reader wrote it, so the two meet on the reader's own (source, URL).
 *
 * Kept per URL: a 53-bit fingerprint of source and URL and the line's fields as JSON text, about
 * 100 bytes a line with a few fields (a Set of strings would hold each URL whole).
 */
export class ManifestJoin {
  /** Fingerprint of source and URL -> the line's number, or its `manifest` object as JSON. */
  private readonly lines = new Map<number, number | string>();
  private readonly matched = new SeenUrls();
  /** Field names in the order first met (a CSV's header order), for CSV columns. */
  readonly fieldNames: string[] = [];
  /** Records of URLs the manifest does not have, left out. */
  notInManifest = 0;

  private constructor(readonly manifest: string) {}

  static async read(manifest: string): Promise<ManifestJoin> {
    await checkManifest(manifest);
    const join = new ManifestJoin(manifest);
    const names = new Set<string>();
    for await (const entry of readManifest(manifest, undefined, true)) {
      if ('error' in entry) continue;
      const key = keyOf(entry.source, entry.url);
      // A URL listed twice is crawled once, for its first line.
      if (join.lines.has(key)) continue;
      if (entry.fields) {
        for (const name of Object.keys(entry.fields)) {
          if (!names.has(name)) {
            names.add(name);
            join.fieldNames.push(name);
          }
        }
        join.lines.set(key, JSON.stringify({ line: entry.line, ...entry.fields }));
      } else join.lines.set(key, entry.line);
    }
    return join;
  }

  /** URLs (of a source) the manifest lists, each once. */
  get urls(): number {
    return this.lines.size;
  }

  /** The manifest's URLs that no record joined so far. */
  get withoutRecord(): number {
    return this.lines.size - this.matched.size;
  }

  /** The record given its `manifest` field, or undefined (counted) when its URL is not the manifest's. */
  attach(record: Record<string, unknown>): Record<string, unknown> | undefined {
    const found = this.find(record.source, record.url);
    if (found === undefined) return undefined;
    record.manifest = typeof found === 'number' ? { line: found } : JSON.parse(found);
    return record;
  }

  /**
   * A record's NDJSON line with its `manifest` field, or undefined (counted) when its URL is not
   * the manifest's, or when the line is not one the crawl wrote (then attach() is for it). A
   * record line begins with its url and source: they are read from there, and the field is
   * written in before the closing brace, without parsing and writing the record again (a
   * million records took twice as long so).
   */
  attachLine(line: string): string | undefined | false {
    const m = RECORD_START.exec(line);
    if (!m || !line.endsWith('}')) return false;
    const found = this.find(JSON.parse(m[2]!), JSON.parse(m[1]!));
    if (found === undefined) return undefined;
    return `${line.slice(0, -1)},"manifest":${typeof found === 'number' ? `{"line":${found}}` : found}}`;
  }

  private find(source: unknown, url: unknown): number | string | undefined {
    const key = typeof url === 'string' && typeof source === 'string' ? keyOf(source, url) : undefined;
    const found = key === undefined ? undefined : this.lines.get(key);
    if (key === undefined || found === undefined) {
      this.notInManifest += 1;
      return undefined;
    }
    this.matched.addFingerprint(Math.floor(key / 0x100000000), key % 0x100000000);
    return found;
  }
}

/** How the crawl writes a record (recordOf): url, then source, as JSON strings. */
const RECORD_START = /^\{"url":("(?:[^"\\]|\\.)*"),"source":("(?:[^"\\]|\\.)*"),/;

function keyOf(source: string, url: string): number {
  return fingerprint53(`${source}\n${url}`);
}
