import fs from 'node:fs/promises';
import path from 'node:path';
import { urlHash } from './keys';

/**
 * Fetched bytes are put here when storing their thumbnail fails, so the retried activity can
 * store them without asking the site again. Spooled files are rare, so which URLs have one is
 * kept in memory (read from the directory once): the common case costs no file system call.
 */
export class Spool {
  private index?: Promise<Set<string>>;

  constructor(private readonly dir: string) {}

  private file(hash: string): string {
    return path.join(this.dir, `${hash}.bin`);
  }

  private hashes(): Promise<Set<string>> {
    this.index ??= fs.readdir(this.dir).then(
      (names) => new Set(names.filter((n) => n.endsWith('.bin')).map((n) => n.slice(0, -4))),
      () => new Set<string>(),
    );
    return this.index;
  }

  async get(url: string): Promise<Buffer | undefined> {
    const hashes = await this.hashes();
    if (hashes.size === 0) return undefined; // the common case: no hash to compute
    const hash = urlHash(url);
    if (!hashes.has(hash)) return undefined;
    try {
      return await fs.readFile(this.file(hash));
    } catch {
      return undefined;
    }
  }

  async put(url: string, body: Buffer): Promise<void> {
    const hash = urlHash(url);
    await fs.mkdir(this.dir, { recursive: true });
    const tmp = `${this.file(hash)}.${process.pid}.tmp`;
    await fs.writeFile(tmp, body);
    await fs.rename(tmp, this.file(hash));
    (await this.hashes()).add(hash);
  }

  async delete(url: string): Promise<void> {
    const hash = urlHash(url);
    (await this.hashes()).delete(hash);
    await fs.rm(this.file(hash), { force: true });
  }
}
