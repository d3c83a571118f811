import { addFingerprints, downloadedIndexPrefix, encodeFingerprints, isIndexFileName, queuedChunkOf } from '../pipeline/downloadedIndex';
import { sourceSegment } from '../pipeline/keys';
import type { ObjectStore } from '../pipeline/store';
import { chunkDoneKey, doneChunkNumber } from '../shared/chunkRanges';
import { forEachLimit } from '../shared/concurrency';
import { SeenUrls } from '../shared/seenUrls';

/**
 * What the store holds already for one source of one manifest portion (see manifestPortions):
 * the chunks finished by an earlier start of it, the URLs the source downloaded under other
 * manifests, and the URLs other manifests' unfinished chunks hold; this portion leaves out both.
 *
 * Chunk n of a portion must hold the same URLs on every start (its done-marker speaks for them),
 * so what is left out is fixed when the portion's first chunk for the source is written: the
 * index files and queued chunks read then are named in `downloaded-before.json` beside the
 * chunks, and later starts read exactly those. A portion whose chunks were written before there
 * was an index (or with nothing to leave out) leaves nothing out, as it did then.
 */
export interface PriorWork {
  /** Chunk numbers with a done-marker. */
  done: Set<number>;
  /**
   * No chunk of this portion was written for the source before: nothing it leaves out is fixed
   * yet, so what other sources downloaded may be read afresh (see useHostDownloads).
   */
  fresh?: boolean;
  /** Hosts (by key segment) whose downloads under any source this portion leaves out (see useHostDownloads). */
  underHosts?: Set<string>;
  /** URLs downloaded under other manifests, left out of this portion's chunks. */
  downloaded?: SeenUrls;
  /**
   * URLs in chunks of other manifests that were not finished when this portion's chunks were
   * first written, left out too: they are crawled once, in those chunks.
   */
  queued?: QueuedElsewhere;
}

export interface QueuedElsewhere {
  urls: SeenUrls;
  chunks: QueuedChunk[];
}

/** A chunk of another manifest, not finished when this portion's chunks were first written. */
export interface QueuedChunk {
  /** The other manifest portion's id and the chunk's number in it. */
  portion: string;
  n: number;
  /** Its `.queued` marker's name in the source's index. */
  marker: string;
  count: number;
  /** Its URLs' fingerprints, 8 bytes each (see SeenUrls). */
  fingerprints: Buffer;
  /**
   * Still without a done-marker at this start: the start adds it to the source's monitor with
   * its own chunks when they share URLs, so that a crawl of the other manifest stopped before it
   * came to them does not leave them uncrawled.
   */
  undone: boolean;
}

const BEFORE_FILE = 'downloaded-before.json';
/** Index files and chunks read at once: against S3 each is a round trip. */
const READ_CONCURRENCY = 16;

/**
 * @param ownPortions the portions of the manifest being started: their chunks are its own, not
 * another manifest's queued work.
 */
export async function loadPriorWork(store: ObjectStore, portionDir: string, chunkPrefix: string, source: string, ownPortions: ReadonlySet<string>): Promise<PriorWork> {
  const done = new Set<number>();
  let chunksWritten = false;
  let beforeFile = false;
  const underHosts = new Set<string>();
  for await (const key of store.list(portionDir)) {
    const n = doneChunkNumber(chunkPrefix, key);
    if (n !== undefined) done.add(n);
    else if (key.startsWith(chunkPrefix)) chunksWritten = true;
    else if (key === portionDir + BEFORE_FILE) beforeFile = true;
    else if (key.startsWith(portionDir + UNDER_HOST)) underHosts.add(key.slice(portionDir.length + UNDER_HOST.length));
  }
  const own = await loadOwnPriorWork(store, portionDir, source, ownPortions, { done, chunksWritten, beforeFile });
  return { ...own, ...(underHosts.size > 0 ? { underHosts } : {}), ...(!chunksWritten ? { fresh: true } : {}) };
}

/** The source's own index and other manifests' queued chunks of it, as PriorWork describes. */
async function loadOwnPriorWork(store: ObjectStore, portionDir: string, source: string, ownPortions: ReadonlySet<string>,
  portion: { done: Set<number>; chunksWritten: boolean; beforeFile: boolean }): Promise<PriorWork> {
  const { done, chunksWritten, beforeFile } = portion;
  const segment = sourceSegment(source);
  const indexPrefix = downloadedIndexPrefix(segment);
  const read = (names: string[]) => readIndexFiles(store, indexPrefix, names);
  /**
   * Reads queued chunks (by their `.queued` marker names), passing over those finished by now
   * when `unfinishedOnly`: those whose URL list is missing are left out of the result.
   */
  const readQueued = async (names: string[], unfinishedOnly: boolean): Promise<{ queued: QueuedElsewhere; missing: string[] }> => {
    const chunks: QueuedChunk[] = [];
    const missing: string[] = [];
    await forEachLimit(names, READ_CONCURRENCY, async (name) => {
      const c = queuedChunkOf(segment, name)!;
      const undone = (await store.get(chunkDoneKey(c.spool))) === undefined;
      if (unfinishedOnly && !undone) return;
      const body = await store.get(c.spool);
      if (!body) {
        missing.push(name);
        return;
      }
      const fingerprints = encodeFingerprints(body.toString('utf8').split('\n').map((l) => l.trim()).filter(Boolean));
      chunks.push({ portion: c.portion, n: c.n, marker: name, count: fingerprints.length / 8, fingerprints, undone });
    });
    chunks.sort((a, b) => (a.portion < b.portion ? -1 : a.portion > b.portion ? 1 : a.n - b.n));
    const urls = new SeenUrls();
    for (const c of chunks) addFingerprints(c.fingerprints, urls);
    return { queued: { urls, chunks }, missing };
  };
  if (beforeFile) {
    const path = portionDir + BEFORE_FILE;
    const before = parseBeforeFile(await store.get(path), path, segment);
    const prior: PriorWork = { done };
    if (before.indexFiles.length > 0) {
      const { downloaded, bad: [bad] } = await read(before.indexFiles);
      if (bad !== undefined) {
        throw cannotRemake(`the index file ${indexPrefix}${bad} named in ${path} is missing or damaged in the ${store.description}`, source);
      }
      prior.downloaded = downloaded;
    }
    if (before.queuedChunks.length > 0) {
      const { queued, missing: [missing] } = await readQueued(before.queuedChunks, false);
      if (missing !== undefined) {
        throw cannotRemake(`the chunk ${queuedChunkOf(segment, missing)!.spool} of another manifest, named in ${path}, is missing in the ${store.description}`, source);
      }
      prior.queued = queued;
    }
    return prior;
  }
  if (chunksWritten) return { done };
  const listed: string[] = [];
  const marked: string[] = [];
  for await (const key of store.list(indexPrefix)) {
    const name = key.slice(indexPrefix.length);
    if (isIndexFileName(name)) listed.push(name);
    else if (queuedChunkOf(segment, name)) marked.push(name);
  }
  const finished = new Set(listed);
  // Of other manifests, and without an index file: not finished when listed.
  const unfinished = marked.filter((name) => {
    const c = queuedChunkOf(segment, name)!;
    return !finished.has(c.indexName) && !ownPortions.has(c.portion);
  });
  // A damaged file is passed over (its URLs are downloaded again), not made part of this
  // manifest for good; so is a queued chunk whose URL list is gone, or that finished meanwhile.
  const [{ downloaded, bad }, { queued }] = await Promise.all([read(listed), readQueued(unfinished, true)]);
  const indexFiles = listed.filter((n) => !bad.has(n)).sort();
  const queuedChunks = queued.chunks.map((c) => c.marker);
  if (indexFiles.length === 0 && queuedChunks.length === 0) return { done };
  // Written only when it leaves something out: without it a later start leaves nothing out,
  // which is what this one does then.
  await store.put(portionDir + BEFORE_FILE, `${JSON.stringify({ indexFiles, queuedChunks })}\n`, 'application/json');
  if (queuedChunks.length === 0) return { done, downloaded };
  return { done, ...(indexFiles.length > 0 ? { downloaded } : {}), queued };
}

/** Beside a source's chunks: the portion's record of a host's downloads is part of what they leave out. */
const UNDER_HOST = 'under-host-';

/** A source's finished index files (by its key segment), from one listing. */
export async function listSourceIndex(store: ObjectStore, segment: string): Promise<string[]> {
  const prefix = downloadedIndexPrefix(segment);
  const names: string[] = [];
  for await (const key of store.list(prefix)) {
    const name = key.slice(prefix.length);
    if (isIndexFileName(name)) names.push(name);
  }
  return names.sort();
}

/** What all sources had downloaded of one host's URLs, and whether a portion's record said so. */
export interface HostDownloads {
  downloaded: SeenUrls;
  recorded: boolean;
}

/**
 * What the sources that may hold a host's URLs downloaded of them (the host as a source of its
 * own, and the named sources that have URLs of it), for one manifest portion: a URL listed
 * under a source name of its own and, in an earlier manifest, without one (under its host), or
 * the other way round, is one image. Read once per portion, when a first source needs it, and
 * recorded in `work/<portion>/~hosts/<host>.json` (the index files read, per source) when there
 * is anything; a later start of the portion reads exactly those files. Undefined when nothing
 * was downloaded. (`~` is in no safe source segment, and hashed ones end in hex.)
 *
 * @param listIndex a source's index files now (listed once per start, whichever hosts need it)
 */
export async function loadHostDownloads(store: ObjectStore, portionRoot: string, host: string, sources: ReadonlySet<string>,
  listIndex: (segment: string) => Promise<string[]>): Promise<HostDownloads | undefined> {
  const key = `${portionRoot}~hosts/${host}.json`;
  const body = await store.get(key);
  if (body) {
    const recorded = parseHostFile(body, key);
    const downloaded = new SeenUrls();
    for (const [segment, names] of Object.entries(recorded)) {
      const { bad: [bad] } = await readIndexFiles(store, downloadedIndexPrefix(segment), names, downloaded);
      if (bad !== undefined) {
        throw cannotRemake(`the index file ${downloadedIndexPrefix(segment)}${bad} named in ${key} is missing or damaged in the ${store.description}`);
      }
    }
    return { downloaded, recorded: true };
  }
  const downloaded = new SeenUrls();
  const found = new Map<string, string[]>();
  // A host of a shared CDN can be in thousands of named sources: listed side by side.
  await forEachLimit([...sources], READ_CONCURRENCY, async (segment) => {
    const names = await listIndex(segment);
    if (names.length === 0) return;
    // A damaged file is passed over (its URLs are downloaded again), not recorded.
    const { bad } = await readIndexFiles(store, downloadedIndexPrefix(segment), names, downloaded);
    const good = names.filter((n) => !bad.has(n));
    if (good.length > 0) found.set(segment, good);
  });
  if (found.size === 0) return undefined;
  const record = Object.fromEntries([...found].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  await store.put(key, `${JSON.stringify({ sources: record })}\n`, 'application/json');
  return { downloaded, recorded: false };
}

/**
 * The host's downloads (see loadHostDownloads) as one source of a portion leaves them out: read
 * afresh until the source has chunks in the portion, and marked beside them (`under-host-<host>`)
 * before a URL is left out for them; a source with chunks and no mark for the host made them
 * leaving nothing out for it, and goes on so.
 */
export async function useHostDownloads(store: ObjectStore, portionDir: string, source: string, host: string, prior: PriorWork,
  load: () => Promise<HostDownloads | undefined>): Promise<SeenUrls | undefined> {
  const marked = prior.underHosts?.has(host) ?? false;
  if (!marked && !prior.fresh) return undefined;
  const found = await load();
  if (marked) {
    if (!found?.recorded) {
      throw cannotRemake(`${portionDir}${UNDER_HOST}${host} names a record of what was downloaded of ${host}'s URLs that is missing from the ${store.description}`, source);
    }
    return found.downloaded;
  }
  if (!found) return undefined;
  await store.put(`${portionDir}${UNDER_HOST}${host}`, '', 'text/plain');
  return found.downloaded;
}

/**
 * A file that fixed what a portion's chunks leave out is gone or damaged: read without it, they
 * would hold other URLs than when first written, and a chunk's done-marker would pass over URLs
 * never crawled.
 */
function cannotRemake(problem: string, source?: string): Error {
  const chunks = source === undefined ? "this manifest's chunks" : `this manifest's chunks of ${JSON.stringify(source)}`;
  return new Error(`${problem}: ${chunks} cannot be made again as they were without it; restore it, or start the manifest into another store`);
}

function parseHostFile(body: Buffer, key: string): Record<string, string[]> {
  try {
    const sources = (JSON.parse(body.toString('utf8')) as { sources?: unknown }).sources;
    if (sources && typeof sources === 'object' && !Array.isArray(sources)
      && Object.entries(sources).every(([segment, names]) => !segment.includes('/') && Array.isArray(names)
        && names.every((n) => typeof n === 'string' && isIndexFileName(n)))) {
      return sources as Record<string, string[]>;
    }
  } catch {
    // reported below
  }
  throw new Error(`${key} in the store is not valid: it names the URLs an earlier start left out of this manifest's chunks`);
}

/** Reads index files (into `downloaded` when given): their URLs, and the names of those that are missing or damaged. */
export async function readIndexFiles(store: ObjectStore, indexPrefix: string, names: string[], downloaded = new SeenUrls()): Promise<{ downloaded: SeenUrls; bad: Set<string> }> {
  const bad = new Set<string>();
  await forEachLimit(names, READ_CONCURRENCY, async (name) => {
    const body = await store.get(indexPrefix + name);
    if (!body || !addFingerprints(body, downloaded)) bad.add(name);
  });
  return { downloaded, bad };
}

/** Whether the chunk holds any of `urls`. */
export function sharesUrls(chunk: QueuedChunk, urls: SeenUrls): boolean {
  for (let at = 0; at < chunk.fingerprints.length; at += 8) {
    if (urls.hasFingerprint(chunk.fingerprints.readUInt32BE(at), chunk.fingerprints.readUInt32BE(at + 4))) return true;
  }
  return false;
}

function parseBeforeFile(body: Buffer | undefined, key: string, segment: string): { indexFiles: string[]; queuedChunks: string[] } {
  try {
    const parsed = JSON.parse(body?.toString('utf8') ?? '') as { indexFiles?: unknown; queuedChunks?: unknown };
    const names = parsed.indexFiles;
    // Files written before queued chunks were left out have none.
    const queued = parsed.queuedChunks ?? [];
    if (Array.isArray(names) && names.every((n) => typeof n === 'string' && isIndexFileName(n))
      && Array.isArray(queued) && queued.every((n) => typeof n === 'string' && queuedChunkOf(segment, n) !== undefined)) {
      return { indexFiles: names as string[], queuedChunks: queued as string[] };
    }
  } catch {
    // reported below
  }
  throw new Error(`${key} in the store is not valid: it names the URLs an earlier start left out of these chunks`);
}
