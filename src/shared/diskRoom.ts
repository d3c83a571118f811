import fs from 'node:fs';
import path from 'node:path';
import { log } from './log';

/**
 * Room on the disks a crawl writes to. When the embedded Temporal server's disk filled, the
 * server failed every write ("database or disk is full") and the crawl stopped without a word:
 * `crawl run` showed each source as "no worker answered within 10 s: is a crawl worker running?".
 * Nothing was lost (it went on once there was room), but the operator was sent looking for the
 * wrong thing. This says what it is, once per change.
 */

export interface DiskSample {
  freeBytes: number;
  totalBytes: number;
}

export type DiskState = 'ok' | 'low' | 'full';

const MiB = 1024 * 1024;
/** SQLite and the store write a few pages at a time; below this, their writes fail or soon will. */
export const FULL_BELOW_BYTES = MiB;
/** Nearly full: below 256 MiB (thousands of thumbnails, minutes of history), or a twentieth of a small disk. */
export function lowBelowBytes(totalBytes: number): number {
  return Math.max(FULL_BELOW_BYTES * 4, Math.min(256 * MiB, Math.floor(totalBytes / 20)));
}

/**
 * The disk's state, with some slack on the way back (a disk hovering at a threshold as files
 * come and go would otherwise be reported at each poll): out of `full` at twice its threshold,
 * out of `low` at 1.25 times.
 */
export function diskState(s: DiskSample, previous: DiskState = 'ok'): DiskState {
  const low = lowBelowBytes(s.totalBytes);
  if (s.freeBytes < FULL_BELOW_BYTES || (previous === 'full' && s.freeBytes < FULL_BELOW_BYTES * 2)) return 'full';
  if (s.freeBytes < low || (previous !== 'ok' && s.freeBytes < low * 1.25)) return 'low';
  return 'ok';
}

/**
 * Free and total bytes of the file system that holds `dir`, or will once it is made (space an
 * unprivileged writer may use), or undefined when it cannot be read.
 */
export function sampleDisk(dir: string): DiskSample | undefined {
  try {
    const s = fs.statfsSync(existingDir(dir));
    return { freeBytes: s.bavail * s.bsize, totalBytes: s.blocks * s.bsize };
  } catch {
    return undefined;
  }
}

/** An error that says the disk (or the user's quota on it) is full. */
export function isDiskFull(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

export function bytesText(n: number): string {
  if (n >= 1024 * 1024 * 1024) return `${(n / (1024 * 1024 * 1024)).toFixed(1)} GB`;
  if (n >= MiB) return `${(n / MiB).toFixed(1)} MB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KB`;
  return `${n} bytes`;
}

/** A directory watched for room, and what writes there ("the embedded Temporal server"). */
export interface WatchedDir {
  dir: string;
  what: string;
}

export interface DiskNotice {
  state: DiskState;
  dirs: string[];
  freeBytes: number;
  totalBytes: number;
  note: string;
}

/**
 * Watches the disks of some directories (each disk once, however many of them it holds) and
 * says when one of them changes state. `sample` is fs.statfs by default (tests pass their own).
 */
export class DiskRoomWatch {
  private readonly states = new Map<string, DiskState>();

  constructor(private readonly dirs: readonly WatchedDir[], private readonly sample: (dir: string) => DiskSample | undefined = sampleDisk, private readonly deviceOf: (dir: string) => string | undefined = deviceOfDir) {}

  /** What changed since the last call (the first call reports only disks that are low or full). */
  check(): DiskNotice[] {
    const byDisk = new Map<string, WatchedDir[]>();
    for (const d of this.dirs) {
      const dev = this.deviceOf(d.dir);
      if (dev === undefined) continue; // cannot be looked at: nothing to say of its disk
      byDisk.set(dev, [...(byDisk.get(dev) ?? []), d]);
    }
    const notices: DiskNotice[] = [];
    for (const [dev, dirs] of byDisk) {
      const s = this.sample(dirs[0]!.dir);
      if (!s) continue;
      const before = this.states.get(dev) ?? 'ok';
      const state = diskState(s, before);
      this.states.set(dev, state);
      if (state === before) continue;
      const where = dirs.map((d) => `${d.dir} (${d.what})`).join(' and ');
      const free = `${bytesText(s.freeBytes)} free of ${bytesText(s.totalBytes)}`;
      const note = state === 'full'
        ? `the disk of ${where} is full (${free}): the crawl waits, losing nothing, until there is room; free some space there and it goes on by itself`
        : state === 'low'
          ? `the disk of ${where} is nearly full (${free}): once it is full, the crawl waits until there is room`
          : `the disk of ${where} has room again (${free})`;
      notices.push({ state, dirs: dirs.map((d) => d.dir), freeBytes: s.freeBytes, totalBytes: s.totalBytes, note });
    }
    return notices;
  }
}

function deviceOfDir(dir: string): string | undefined {
  try {
    return String(fs.statSync(existingDir(dir)).dev);
  } catch {
    return undefined;
  }
}

/** `dir`, or its nearest parent that exists: where it will be made. */
function existingDir(dir: string): string {
  let d = path.resolve(dir);
  while (!fs.existsSync(d) && path.dirname(d) !== d) d = path.dirname(d);
  return d;
}

/**
 * For long-running commands without a progress view (`crawl worker`, `crawl dev-server`): each
 * change logged, at WARN while a disk is nearly full or full. Returns what stops the watch.
 */
export function logDiskRoom(dirs: readonly WatchedDir[], everyMs = 10_000): () => void {
  const watch = new DiskRoomWatch(dirs);
  const look = () => {
    for (const { note, ...n } of watch.check()) {
      if (n.state === 'ok') log.info({ event: 'disk-space', ...n }, note);
      else log.warn({ event: 'disk-space', ...n }, note);
    }
  };
  look();
  const timer = setInterval(look, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
