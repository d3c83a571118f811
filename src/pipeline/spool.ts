import fs from 'node:fs/promises';
import path from 'node:path';
import { urlHash } from './keys';
import type { RightsHeaders } from './rightsHeaders';
import { LocalStore } from './store';

/**
 * Fetched bytes are put here when storing their thumbnail fails, so the retried activity can
 * store them without asking the site again. Spooled files are rare, so which URLs have one is
 * kept in memory (read from the directory once): the common case costs no file system call.
 */
export class Spool {
  private index?: Promise<Set<string>>;
  /** The index once read (see mayHold). */
  private loaded?: Set<string>;
  /** Writes as the local store does (synced, name included): the bytes are there after a power cut too. */
  private readonly files: LocalStore;

  constructor(private readonly dir: string) {
    this.files = new LocalStore(dir);
  }

  private file(hash: string): string {
    return path.join(this.dir, `${hash}.bin`);
  }

  private hashes(): Promise<Set<string>> {
    this.index ??= fs.readdir(this.dir).then(
      (names) => new Set(names.filter((n) => n.endsWith('.bin')).map((n) => n.slice(0, -4))),
      () => new Set<string>(),
    ).then((set) => (this.loaded = set));
    return this.index;
  }

  /** False only when the URL certainly has no spooled bytes (the index has been read). */
  mayHold(url: string): boolean {
    if (!this.loaded) return true;
    return this.loaded.size > 0 && this.loaded.has(urlHash(url));
  }

  async get(url: string): Promise<{ body: Buffer; rights?: RightsHeaders } | undefined> {
    const hashes = await this.hashes();
    if (hashes.size === 0) return undefined; // the common case: no hash to compute
    const hash = urlHash(url);
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
    if (rights) await this.files.put(`${hash}.json`, Buffer.from(JSON.stringify(rights)), 'application/json');
    await this.files.put(`${hash}.bin`, body, 'application/octet-stream');
    (await this.hashes()).add(hash);
  }

  async delete(url: string): Promise<void> {
    const hash = urlHash(url);
    (await this.hashes()).delete(hash);
    await fs.rm(this.file(hash), { force: true });
    await fs.rm(path.join(this.dir, `${hash}.json`), { force: true });
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
