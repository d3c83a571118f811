import { addFingerprints, downloadedIndexPrefix, isIndexFileName } from '../pipeline/downloadedIndex';
import { sourceSegment } from '../pipeline/keys';
import type { ObjectStore } from '../pipeline/store';
import { doneChunkNumber } from '../shared/chunkRanges';
import { forEachLimit } from '../shared/concurrency';
import { SeenUrls } from '../shared/seenUrls';

/**
 * What the store holds already for one source of one manifest portion (see manifestPortions):
 * the chunks finished by an earlier start of it, and the URLs the source downloaded under other
 * manifests, which this portion leaves out.
 *
 * Chunk n of a portion must hold the same URLs on every start (its done-marker speaks for them),
 * so what is left out is fixed when the portion's first chunk for the source is written: the
 * index files read then are named in `downloaded-before.json` beside the chunks, and later starts
 * read exactly those. A portion whose chunks were written before there was an index (or with
 * nothing downloaded before) leaves nothing out, as it did then.
 */
export interface PriorWork {
  /** Chunk numbers with a done-marker. */
  done: Set<number>;
  /** URLs downloaded under other manifests, left out of this portion's chunks. */
  downloaded?: SeenUrls;
}

const BEFORE_FILE = 'downloaded-before.json';
/** Index files read at once: against S3 each is a round trip. */
const READ_CONCURRENCY = 16;

export async function loadPriorWork(store: ObjectStore, portionDir: string, chunkPrefix: string, source: string): Promise<PriorWork> {
  const done = new Set<number>();
  let chunksWritten = false;
  let beforeFile = false;
  for await (const key of store.list(portionDir)) {
    const n = doneChunkNumber(chunkPrefix, key);
    if (n !== undefined) done.add(n);
    else if (key.startsWith(chunkPrefix)) chunksWritten = true;
    else if (key === portionDir + BEFORE_FILE) beforeFile = true;
  }
  const indexPrefix = downloadedIndexPrefix(sourceSegment(source));
  /** Reads index files: their URLs, and the names of those that are missing or damaged. */
  const read = async (names: string[]): Promise<{ downloaded: SeenUrls; bad: Set<string> }> => {
    const downloaded = new SeenUrls();
    const bad = new Set<string>();
    await forEachLimit(names, READ_CONCURRENCY, async (name) => {
      const body = await store.get(indexPrefix + name);
      if (!body || !addFingerprints(body, downloaded)) bad.add(name);
    });
    return { downloaded, bad };
  };
  if (beforeFile) {
    const names = parseBeforeFile(await store.get(portionDir + BEFORE_FILE), portionDir + BEFORE_FILE);
    if (names.length === 0) return { done };
    const { downloaded, bad: [bad] } = await read(names);
    // Read without it, this portion's chunks would hold other URLs than they did when first
    // written, and a chunk's done-marker would pass over URLs never crawled.
    if (bad !== undefined) {
      throw new Error(`the index file ${indexPrefix}${bad} named in ${portionDir}${BEFORE_FILE} is missing or damaged in the ${store.description}: ` +
        `this manifest's chunks of ${JSON.stringify(source)} cannot be made again as they were without it; restore it, or start the manifest into another store`);
    }
    return { done, downloaded };
  }
  if (chunksWritten) return { done };
  const listed: string[] = [];
  for await (const key of store.list(indexPrefix)) {
    const name = key.slice(indexPrefix.length);
    if (isIndexFileName(name)) listed.push(name);
  }
  // A damaged file is passed over (its URLs are downloaded again), not made part of this
  // manifest for good.
  if (listed.length === 0) return { done };
  const { downloaded, bad } = await read(listed);
  const names = listed.filter((n) => !bad.has(n)).sort();
  if (names.length === 0) return { done };
  // Written only when it leaves something out: without it a later start leaves nothing out,
  // which is what this one does then.
  await store.put(portionDir + BEFORE_FILE, `${JSON.stringify({ indexFiles: names })}\n`, 'application/json');
  return { done, downloaded };
}

function parseBeforeFile(body: Buffer | undefined, key: string): string[] {
  try {
    const parsed = JSON.parse(body?.toString('utf8') ?? '') as { indexFiles?: unknown };
    const names = parsed.indexFiles;
    if (Array.isArray(names) && names.every((n) => typeof n === 'string' && isIndexFileName(n))) return names as string[];
  } catch {
    // reported below
  }
  throw new Error(`${key} in the store is not valid: it names the URLs an earlier start left out of these chunks`);
}
