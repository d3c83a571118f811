import fs from 'node:fs/promises';
import path from 'node:path';
import { urlHash } from './keys';

/**
 * Fetched bytes wait here until their thumbnail and record are stored, so that a failure
 * after the download (store down, worker killed) does not cost the site another request.
 */
export class Spool {
  constructor(private readonly dir: string) {}

  private file(url: string): string {
    return path.join(this.dir, `${urlHash(url)}.bin`);
  }

  async get(url: string): Promise<Buffer | undefined> {
    try {
      return await fs.readFile(this.file(url));
    } catch {
      return undefined;
    }
  }

  async put(url: string, body: Buffer): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true });
    const tmp = `${this.file(url)}.${process.pid}.tmp`;
    await fs.writeFile(tmp, body);
    await fs.rename(tmp, this.file(url));
  }

  async delete(url: string): Promise<void> {
    await fs.rm(this.file(url), { force: true });
  }
}
