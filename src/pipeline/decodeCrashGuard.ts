import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { log } from '../shared/log';
import { processAlive } from '../shared/processAlive';

/** Deaths of worker processes while an image was being decoded, after which it is not decoded again. */
export const DECODE_DEATHS_TO_REFUSE = 2;

/** A log of a dead process older than this is dropped unread: it says nothing of images crawled now. */
const DEAD_LOG_MAX_AGE_MS = 7 * 24 * 60 * 60_000;

/**
 * Images whose decoding killed the worker. sharp decodes in this process: an image that crashes
 * its decoder (a libvips or codec bug a hostile file can reach) or exhausts its memory takes the
 * worker down with every activity on it, and its fetch activity, retried, fetched and decoded
 * it again, three attempts a grant and three grants a URL: nine dead workers for one image,
 * each a stall of every source it was crawling.
 *
 * Each process appends `S <sha256>` as it starts decoding an image and `E <sha256>` when that
 * is over, to a log of its own (not synced: a killed process's writes are in the kernel's cache).
 * A worker starting on the machine claims the logs of processes no longer alive and counts, for
 * each image, the deaths it was being decoded in; one decoded in DECODE_DEATHS_TO_REFUSE of
 * them is refused from then on. One death is not enough: every image in sharp at the moment of
 * an unrelated kill (an operator's SIGKILL, the OOM killer) was being decoded too. Per machine
 * (its data directory): a worker on another machine may decode it, and die, twice itself.
 * Best effort: a log that cannot be written or read leaves images decoded as before.
 */
/** The guards with a log open in this process, closed as it exits. */
const open = new Set<DecodeCrashGuard>();
let exitHooked = false;

export class DecodeCrashGuard {
  private fd: number | undefined;
  private readonly own: string;
  private deaths = new Map<string, number>();
  /** The size of the deaths file when last read: another worker's claim grows it. */
  private deathsSize = -1;
  private saidUnwritable = false;
  private started = false;

  constructor(private readonly dir: string, private readonly alive: (pid: number) => boolean = processAlive) {
    this.own = `${os.hostname()}-${process.pid}-${crypto.randomBytes(4).toString('hex')}.log`;
  }

  /** How many worker deaths on this machine came while this image was being decoded. */
  deathsDuring(sha256: string): number {
    this.start();
    this.readDeaths();
    return this.deaths.get(sha256) ?? 0;
  }

  /** Around the decoding of an image: marked as started, and as over however it ends. */
  async decoding<T>(sha256: string, decode: () => Promise<T>): Promise<T> {
    this.start();
    this.write(`S ${sha256}\n`);
    try {
      return await decode();
    } finally {
      this.write(`E ${sha256}\n`);
    }
  }

  /** Its log removed (nothing died here), and its directory when that leaves it empty: a crawl that met no crash leaves nothing. */
  close(): void {
    open.delete(this);
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    try {
      fs.closeSync(fd);
      fs.unlinkSync(path.join(this.dir, this.own));
      fs.rmdirSync(this.dir);
    } catch {
      // not empty (a deaths file, another worker's log), or already gone
    }
  }

  /** At the first image, not before: a worker that decodes nothing makes no directory. */
  private start(): void {
    if (this.started) return;
    this.started = true;
    try {
      fs.mkdirSync(this.dir, { recursive: true });
      this.claimDeadLogs();
      this.fd = fs.openSync(path.join(this.dir, this.own), 'a');
      open.add(this);
      if (!exitHooked) {
        exitHooked = true;
        // A process that exits, even by process.exit(), was not killed by an image.
        process.once('exit', () => { for (const guard of [...open]) guard.close(); });
      }
    } catch (err) {
      this.fail(err);
    }
  }

  private write(line: string): void {
    if (this.fd === undefined) return;
    try {
      fs.writeSync(this.fd, line);
    } catch (err) {
      this.fail(err);
      this.fd = undefined;
    }
  }

  /** The logs of processes that died (on this host) moved aside and counted, once, by whoever renames them first. */
  private claimDeadLogs(): void {
    const host = os.hostname();
    // One line per death and image being decoded in it.
    const lines: string[] = [];
    for (const name of fs.readdirSync(this.dir)) {
      const m = /^(.+)-(\d+)-[0-9a-f]{8}\.log$/.exec(name);
      if (!m || m[1] !== host || name === this.own) continue;
      const pid = Number(m[2]);
      if (pid !== process.pid && this.alive(pid)) continue;
      const file = path.join(this.dir, name);
      const claimed = `${file}.${process.pid}.claimed`;
      try {
        fs.renameSync(file, claimed);
      } catch {
        continue; // another worker claimed it
      }
      try {
        if (Date.now() - fs.statSync(claimed).mtimeMs < DEAD_LOG_MAX_AGE_MS) lines.push(...unfinished(fs.readFileSync(claimed, 'utf8')));
      } finally {
        fs.rmSync(claimed, { force: true });
      }
    }
    if (lines.length === 0) return;
    fs.appendFileSync(path.join(this.dir, 'deaths'), lines.map((sha) => `${sha}\n`).join(''));
    const images = [...new Set(lines)];
    log.warn({ event: 'decode-crash', images: images.length, sha256: images.slice(0, 10) },
      `a worker on this machine died while decoding ${images.length} image(s); an image being decoded in ${DECODE_DEATHS_TO_REFUSE} such deaths is not decoded again`);
  }

  private readDeaths(): void {
    const file = path.join(this.dir, 'deaths');
    try {
      const size = fs.statSync(file).size;
      if (size === this.deathsSize) return;
      const deaths = new Map<string, number>();
      for (const line of fs.readFileSync(file, 'utf8').split('\n')) if (line) deaths.set(line, (deaths.get(line) ?? 0) + 1);
      this.deaths = deaths;
      this.deathsSize = size;
    } catch {
      // none yet, or unreadable: the deaths known stand
    }
  }

  private fail(err: unknown): void {
    if (this.saidUnwritable) return;
    this.saidUnwritable = true;
    log.warn({ event: 'decode-guard-unwritable', dir: this.dir, error: String(err) }, 'the log of images being decoded cannot be written: an image that crashes the worker would be decoded again on each retry');
  }
}

/** The images a log marks as started and never over. */
function unfinished(text: string): string[] {
  const open = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([SE]) ([0-9a-f]{64})$/.exec(line);
    if (!m) continue;
    open.set(m[2]!, (open.get(m[2]!) ?? 0) + (m[1] === 'S' ? 1 : -1));
  }
  return [...open].filter(([, n]) => n > 0).map(([sha]) => sha);
}
