import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { log } from '../shared/log';

/** A journal left by an attempt that never came back is dropped after this long (retries come within minutes). */
export const JOURNAL_MAX_AGE_MS = 24 * 60 * 60_000;

/**
 * What each fetch attempt finished, one line per URL, appended as it finishes, on the worker's
 * own disk. A heartbeat carries the same, but only every 8 s: a worker killed (SIGKILL, the OOM
 * killer) lost what it fetched since its last one, and the retry asked the site again for each
 * (15 of 150 URLs at 5/s, by hand). A retry on a worker that shares the disk (the same machine,
 * the same data directory) reads the journal instead. Writes are not synced: a killed process's
 * writes are in the kernel's cache; a power cut loses them, and the retry then asks the site
 * again, as before. Best effort throughout: a journal that cannot be written or read costs
 * nothing but those second requests.
 */
export class GrantJournal {
  private swept = false;
  /** Said once until a line is written again: on a full disk every grant's first line fails. */
  private saidUnwritable = false;
  private readonly health = {
    failed: (file: string, err: unknown) => {
      if (this.saidUnwritable) return;
      this.saidUnwritable = true;
      log.warn({ event: 'journal-unwritable', file, error: String(err) }, 'fetch journal cannot be written: a retry of a grant after a crash asks the sites again for what it finished');
    },
    wrote: () => { this.saidUnwritable = false; },
  };

  constructor(private readonly dir: string, private readonly maxAgeMs = JOURNAL_MAX_AGE_MS) {}

  private file(key: string): string {
    return path.join(this.dir, `${crypto.createHash('sha256').update(key).digest('hex').slice(0, 40)}.ndjson`);
  }

  /**
   * A writer for `key`'s journal. A first attempt starts it afresh (a file left by a grant of
   * an earlier crawl under the same key says nothing of this one); a retry gets the entries the
   * attempts before it wrote, in order (lines cut short by a kill left out), and appends to them.
   */
  open(key: string, retry: boolean): { earlier: unknown[]; writer: JournalWriter } {
    this.sweep();
    const file = this.file(key);
    if (!retry) removeFile(file);
    const { entries, cut } = retry ? readLines(file) : { entries: [], cut: false };
    return { earlier: entries, writer: new JournalWriter(file, this.dir, this.health, entries.length > 0 || cut, cut) };
  }

  /** Journals of attempts whose grants ended another way (revoked, the crawl stopped) are dropped once, at the first use. */
  private sweep(): void {
    if (this.swept) return;
    this.swept = true;
    const before = Date.now() - this.maxAgeMs;
    void fs.promises.readdir(this.dir).then(async (names) => {
      for (const name of names) {
        if (!name.endsWith('.ndjson')) continue;
        const file = path.join(this.dir, name);
        const stat = await fs.promises.stat(file).catch(() => undefined);
        if (stat && stat.mtimeMs < before) await fs.promises.unlink(file).catch(() => undefined);
      }
    }, () => undefined);
  }
}

/** `cut`: the file ends part-way through a line (the process was killed writing it). */
function readLines(file: string): { entries: unknown[]; cut: boolean } {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return { entries: [], cut: false };
  }
  const entries = text.split('\n').flatMap((line) => {
    if (!line) return [];
    try {
      return [JSON.parse(line) as unknown];
    } catch {
      return [];
    }
  });
  return { entries, cut: text.length > 0 && !text.endsWith('\n') };
}

export class JournalWriter {
  private failed = false;

  /** `cut`: the file ends part-way through a line, which the first line written must not continue. */
  constructor(
    private readonly file: string,
    private readonly dir: string,
    private readonly health: { failed(file: string, err: unknown): void; wrote(): void },
    private exists: boolean,
    private cut = false,
  ) {}

  /**
   * Appends one entry. Synchronous: a line is a write to the page cache, some microseconds, and
   * the lines stay in the order the URLs finished without a queue of promises. The file is
   * opened for each line rather than held: a descriptor per running grant would come out of
   * what the open-files limit leaves for sites' connections (openFiles.ts). Appending, since a
   * superseded attempt of the same grant in this process may still write a line while its
   * successor does (grantAttempts.ts).
   */
  add(entry: unknown): void {
    if (this.failed) return;
    const line = `${this.cut ? '\n' : ''}${JSON.stringify(entry)}\n`;
    try {
      try {
        fs.appendFileSync(this.file, line);
      } catch (err) {
        // No directory: none made yet, or the last grant's discard removed it, empty.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        fs.mkdirSync(this.dir, { recursive: true });
        fs.appendFileSync(this.file, line);
      }
      this.exists = true;
      this.cut = false;
      this.health.wrote();
    } catch (err) {
      // Not tried again in this grant: a line missing from the middle would be no worse, but
      // each failure costs a system call or two.
      this.failed = true;
      this.health.failed(this.file, err);
    }
  }

  /**
   * The grant's records are stored: its journal says nothing more. The directory goes too when
   * no other grant's journal is in it: a crawl into S3 leaves nothing of its own in `--out`.
   */
  discard(): void {
    if (!this.exists) return;
    this.exists = false;
    removeFile(this.file);
    try {
      fs.rmdirSync(this.dir);
    } catch {
      // another grant's journal is there (ENOTEMPTY), or it is gone
    }
  }
}

function removeFile(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch {
    // never written, or gone
  }
}
