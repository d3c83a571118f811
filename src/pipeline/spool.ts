import fs from 'node:fs/promises';
import path from 'node:path';
import { urlHash } from './keys';
import type { RightsHeaders } from './rightsHeaders';
import type { RequestOutcome } from '../shared/types';
import { LocalStore } from './store';

/** A URL's finished outcome and record, kept while the store cannot take the record. */
export interface KeptRecord {
  outcome: Omit<RequestOutcome, 'final' | 'attempt' | 'url'>;
  record: Record<string, unknown>;
}

/**
 * What the spool's disk could not take is kept in memory up to these bounds, for this worker's
 * later grants. The spool is usually on the disk the local store fills: when it was full, each
 * image whose thumbnail or record could not be stored was asked for again once there was room
 * (78 of 700 URLs in a run whose disk filled).
 */
export const MEMORY_BYTES_MAX = 64 * 1024 * 1024;
export const MEMORY_RECORDS_MAX = 20_000;

/**
 * Fetched bytes are put here when storing their thumbnail fails, so the retried activity can
 * store them without asking the site again; so are finished URLs' records when the store cannot
 * take them (`.record.json`), so a later grant records them without asking again. Spooled files
 * are rare, so which URLs have one is kept in memory (read from the directory once): the common
 * case costs no file system call. When the directory cannot take them either, they are kept in
 * memory, within bounds, for this worker only.
 */
export class Spool {
  private index?: Promise<{ bytes: Set<string>; records: Set<string> }>;
  /** By URL hash: what could not be written to the directory (see MEMORY_BYTES_MAX). */
  private readonly memory = { bytes: new Map<string, { body: Buffer; rights?: RightsHeaders }>(), records: new Map<string, KeptRecord>(), byteTotal: 0 };
  /** The index once read (see mayHold). */
  private loaded?: { bytes: Set<string>; records: Set<string> };
  /** Writes as the local store does (synced, name included): the bytes are there after a power cut too. */
  private readonly files: LocalStore;

  constructor(private readonly dir: string, private readonly memoryMax = { bytes: MEMORY_BYTES_MAX, records: MEMORY_RECORDS_MAX }) {
    this.files = new LocalStore(dir);
  }

  private file(hash: string): string {
    return path.join(this.dir, `${hash}.bin`);
  }

  private recordFile(hash: string): string {
    return path.join(this.dir, `${hash}${RECORD}`);
  }

  private read(): Promise<{ bytes: Set<string>; records: Set<string> }> {
    const named = (names: string[], ending: string) => new Set(names.filter((n) => n.endsWith(ending)).map((n) => n.slice(0, -ending.length)));
    this.index ??= fs.readdir(this.dir).then(
      (names) => ({ bytes: named(names, '.bin'), records: named(names, RECORD) }),
      () => ({ bytes: new Set<string>(), records: new Set<string>() }),
    ).then((index) => (this.loaded = index));
    return this.index;
  }

  private async hashes(): Promise<Set<string>> {
    return (await this.read()).bytes;
  }

  /** False only when the URL certainly has no spooled bytes or record (the index has been read). */
  mayHold(url: string): boolean {
    if (!this.loaded) return true;
    const { bytes, records } = this.loaded;
    if (bytes.size === 0 && records.size === 0 && this.memory.bytes.size === 0 && this.memory.records.size === 0) return false;
    const hash = urlHash(url);
    return bytes.has(hash) || records.has(hash) || this.memory.bytes.has(hash) || this.memory.records.has(hash);
  }

  /** Keeps the URL's finished outcome and record until `takeRecord` (written as the local store writes). */
  async keepRecord(url: string, kept: KeptRecord): Promise<void> {
    const hash = urlHash(url);
    try {
      await this.files.put(`${hash}${RECORD}`, Buffer.from(JSON.stringify(kept)), 'application/json');
    } catch (err) {
      if (this.memory.records.size >= this.memoryMax.records && !this.memory.records.has(hash)) throw err;
      this.memory.records.set(hash, kept);
      return;
    }
    (await this.read()).records.add(hash);
  }

  /** The URL's kept outcome and record, removed from the spool; undefined when none is kept. */
  async takeRecord(url: string): Promise<KeptRecord | undefined> {
    const { records } = await this.read();
    if (records.size === 0 && this.memory.records.size === 0) return undefined;
    const hash = urlHash(url);
    const inMemory = this.memory.records.get(hash);
    if (inMemory) {
      this.memory.records.delete(hash);
      return inMemory;
    }
    if (!records.has(hash)) return undefined;
    const kept = await fs.readFile(this.recordFile(hash), 'utf8').then(parseKept, () => undefined);
    records.delete(hash);
    await remove(this.recordFile(hash));
    return kept;
  }

  /** Drops what is kept of these URLs: their records were written after all (by a retried attempt). */
  async dropRecords(urls: readonly string[]): Promise<void> {
    const { records } = await this.read();
    if (records.size === 0 && this.memory.records.size === 0) return;
    for (const url of urls) {
      const hash = urlHash(url);
      this.memory.records.delete(hash);
      if (!records.delete(hash)) continue;
      await remove(this.recordFile(hash));
    }
  }

  async get(url: string): Promise<{ body: Buffer; rights?: RightsHeaders } | undefined> {
    const hashes = await this.hashes();
    if (hashes.size === 0 && this.memory.bytes.size === 0) return undefined; // the common case: no hash to compute
    const hash = urlHash(url);
    const inMemory = this.memory.bytes.get(hash);
    if (inMemory) return inMemory;
    if (!hashes.has(hash)) return undefined;
    let body: Buffer;
    try {
      body = await fs.readFile(this.file(hash));
    } catch {
      return undefined;
    }
    // Beside the bytes, what the response's headers said of their use: the record needs it, and
    // the site is not asked again. A file spooled by a build before this has none.
    const rights = await fs.readFile(path.join(this.dir, `${hash}.json`), 'utf8').then(parseRights, () => undefined);
    return { body, ...(rights ? { rights } : {}) };
  }

  async put(url: string, body: Buffer, rights?: RightsHeaders): Promise<void> {
    const hash = urlHash(url);
    try {
      if (rights) await this.files.put(`${hash}.json`, Buffer.from(JSON.stringify(rights)), 'application/json');
      await this.files.put(`${hash}.bin`, body, 'application/octet-stream');
    } catch (err) {
      if (this.memory.bytes.has(hash)) return;
      if (this.memory.byteTotal + body.length > this.memoryMax.bytes) throw err;
      this.memory.bytes.set(hash, { body, ...(rights ? { rights } : {}) });
      this.memory.byteTotal += body.length;
      return;
    }
    (await this.hashes()).add(hash);
  }

  async delete(url: string): Promise<void> {
    const hash = urlHash(url);
    const inMemory = this.memory.bytes.get(hash);
    if (inMemory) {
      this.memory.bytes.delete(hash);
      this.memory.byteTotal -= inMemory.body.length;
    }
    (await this.hashes()).delete(hash);
    await remove(this.file(hash));
    await remove(path.join(this.dir, `${hash}.json`));
  }
}

const RECORD = '.record.json';

/**
 * A spooled file that cannot be removed is not the URL's failure: its image is stored and
 * recorded. Left behind, it is stored once more (the same key) by a later grant with the URL.
 */
function remove(file: string): Promise<void> {
  return fs.rm(file, { force: true }).catch(() => undefined);
}

/** A kept record as written by keepRecord; a file cut short by a crash is none (the URL is asked again). */
function parseKept(text: string): KeptRecord | undefined {
  try {
    const v = JSON.parse(text) as Partial<KeptRecord>;
    return v && typeof v.outcome === 'object' && v.outcome !== null && typeof v.record === 'object' && v.record !== null ? (v as KeptRecord) : undefined;
  } catch {
    return undefined;
  }
}

/** A spooled response's rights headers; a file cut short by a crash says nothing. */
function parseRights(text: string): RightsHeaders | undefined {
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as RightsHeaders) : undefined;
  } catch {
    return undefined;
  }
}
