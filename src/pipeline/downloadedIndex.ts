import { chunkSpoolKey } from '../shared/chunkRanges';
import { fingerprint, type SeenUrls } from '../shared/seenUrls';

/**
 * Which URLs a source has downloaded (outcome `done`), whichever manifest listed them: a user who
 * starts a new or re-sorted manifest into the same store expects an image downloaded last week
 * not to be downloaded again. Each finished chunk leaves one file beside the source's others,
 * `index/<source segment>/<manifest portion>-<chunk number>.fp64`, holding an 8-byte fingerprint
 * per downloaded URL (see SeenUrls): a start reads a source's whole index in one listing and at
 * 8 bytes per URL (80 MB for 10 million), where reading the source's records back would be
 * ~60 times more.
 *
 * Beside them, each chunk written by `crawl start` leaves an empty `<portion>-<n>.queued` marker,
 * and a finished chunk always leaves its `.fp64` (empty when nothing was downloaded): a `.queued`
 * without its `.fp64` is a chunk not yet crawled. A manifest started meanwhile leaves its URLs
 * out instead of downloading them a second time beside it (see priorWork).
 */

const CHUNK_SPOOL = /^work\/([0-9a-f]{16})\/([^/]+)\/chunk-(\d+)\.txt$/;
const INDEX_FILE = /^[0-9a-f]{16}-\d+\.fp64$/;
const QUEUED_FILE = /^([0-9a-f]{16})-(\d+)\.queued$/;

export function downloadedIndexPrefix(segment: string): string {
  return `index/${segment}/`;
}

/** Whether `name`, listed under downloadedIndexPrefix(), is an index file. */
export function isIndexFileName(name: string): boolean {
  return INDEX_FILE.test(name);
}

/** The chunk's queued marker, or undefined for a chunk not split by `crawl start`. */
export function chunkQueuedKey(spool: string): string | undefined {
  const index = chunkIndexKey(spool);
  return index && index.key.replace(/\.fp64$/, '.queued');
}

/** The chunk a name listed under downloadedIndexPrefix(segment) marks as queued, or undefined for any other name. */
export function queuedChunkOf(segment: string, name: string): { portion: string; n: number; spool: string; indexName: string } | undefined {
  const m = QUEUED_FILE.exec(name);
  if (!m) return undefined;
  const n = Number(m[2]);
  const spool = chunkSpoolKey(`work/${m[1]}/${segment}/chunk-`, n);
  // Only the spelling the start writes: "-007" would name chunk 7 a second time.
  if (chunkQueuedKey(spool) !== `${downloadedIndexPrefix(segment)}${name}`) return undefined;
  return { portion: m[1]!, n, spool, indexName: name.replace(/\.queued$/, '.fp64') };
}

/** The chunk's index file and its source's key segment, or undefined for a chunk not split by `crawl start`. */
export function chunkIndexKey(spool: string): { key: string; segment: string } | undefined {
  const m = CHUNK_SPOOL.exec(spool);
  if (!m) return undefined;
  return { key: `${downloadedIndexPrefix(m[2]!)}${m[1]}-${m[3]}.fp64`, segment: m[2]! };
}

export function encodeFingerprints(urls: readonly string[]): Buffer {
  const out = Buffer.alloc(8 * urls.length);
  urls.forEach((url, i) => {
    const [hi, lo] = fingerprint(url);
    out.writeUInt32BE(hi, 8 * i);
    out.writeUInt32BE(lo, 8 * i + 4);
  });
  return out;
}

/** Adds the fingerprints of an index file to `into`; false when the file is not whole 8-byte entries. */
export function addFingerprints(body: Buffer, into: SeenUrls): boolean {
  if (body.length % 8 !== 0) return false;
  for (let at = 0; at < body.length; at += 8) into.addFingerprint(body.readUInt32BE(at), body.readUInt32BE(at + 4));
  return true;
}

/**
 * Sources named in manifests (not their URLs' hosts) leave one empty marker per host they have
 * URLs of, `index-hosts/<host segment>/<source segment>`: a later manifest listing such a URL
 * without a source (under its host) finds the named source's index there.
 */
const HOST_SOURCES = 'index-hosts/';

export function hostSourceKey(hostSegment: string, sourceSegment: string): string {
  return `${HOST_SOURCES}${hostSegment}/${sourceSegment}`;
}

/** Host segment -> the segments of the named sources with URLs of it, from one listing. */
export async function readHostSources(store: { list(prefix: string): AsyncIterable<string> }): Promise<Map<string, Set<string>>> {
  const found = new Map<string, Set<string>>();
  for await (const key of store.list(HOST_SOURCES)) {
    const [host, source, ...rest] = key.slice(HOST_SOURCES.length).split('/');
    if (!host || !source || rest.length > 0) continue;
    let set = found.get(host);
    if (!set) found.set(host, set = new Set());
    set.add(source);
  }
  return found;
}
