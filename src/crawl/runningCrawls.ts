import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { errorText } from '../shared/errorText';
import { processAlive } from '../shared/processAlive';

/**
 * The `crawl run`s of this machine that run on servers of their own, each with the sites
 * (origins) of its manifest. Two such runs know nothing of each other's monitors: each holds a
 * site to its rate on its own, and a site in both got twice what it bears (tried by hand: two runs
 * of one manifest into two --out directories, 16 requests in a second at a site of rate 8). A run registers its
 * sites before it starts any monitor; the later of two runs that share a site does not start.
 * One file per run, in a directory every user of the machine can write to, as /tmp is.
 */
export const RUNS_DIR = path.join(os.tmpdir(), 'polite-image-crawler-runs');

/** Sites named in the refusal; the rest are counted. */
const SHOWN = 5;

interface Entry {
  pid: number;
  /** The process's start time in clock ticks since boot (Linux): a pid reused since is not this run. */
  procStart: string | null;
  out: string;
  /** The Temporal server the run's monitors are on: runs on one server share a source's monitor. */
  server: string;
  registeredMs: number;
  /** Order of registration within the process. */
  seq: number;
  origins: string[];
}

let registered = 0;

export interface Overlap {
  pid: number;
  out: string;
  registeredMs: number;
  /** This run's sites the other one has, at most SHOWN of them. */
  shown: string[];
  count: number;
}

/** Field 22 of /proc/PID/stat, after the command name (which may hold spaces and parentheses). */
function processStart(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function alive(entry: Entry): boolean {
  return processAlive(entry.pid) && (entry.procStart === null || processStart(entry.pid) === entry.procStart);
}

export class RunRegistration {
  private constructor(private readonly dir: string, private readonly file: string, private readonly entry: Entry) {}

  /**
   * Registers a run of `out` crawling `origins`. Undefined, having said why through `warn`, when
   * the directory cannot be written: the run goes on as before there was a registry.
   */
  static create(run: { out: string; server: string }, origins: Iterable<string>, warn: (m: string) => void, dir = RUNS_DIR): RunRegistration | undefined {
    // To the microsecond, and in order within a process (tests register several runs at once).
    const entry: Entry = { pid: process.pid, procStart: processStart(process.pid), ...run, registeredMs: performance.timeOrigin + performance.now(), seq: ++registered, origins: [...new Set(origins)] };
    const file = path.join(dir, `${process.pid}-${entry.seq}-${Math.random().toString(36).slice(2, 10)}.json`);
    try {
      // Sticky and open to all, as /tmp: runs of other users register here too, and remove only
      // their own files. Only by the run that made it: another user's cannot be changed.
      if (fs.mkdirSync(dir, { recursive: true }) !== undefined) fs.chmodSync(dir, 0o1777);
      fs.writeFileSync(`${file}.tmp`, JSON.stringify(entry));
      fs.renameSync(`${file}.tmp`, file);
    } catch (err) {
      warn(`cannot note this run's sites in ${dir} (${errorText(err)}): another crawl run on this machine with the same sites would not be told of this one, and would send them their rate again`);
      return undefined;
    }
    return new RunRegistration(dir, file, entry);
  }

  /**
   * A live run registered before this one, on another server, with sites of this one. Two runs
   * registering at once each see the other, and only the later one (by time, then pid) is told.
   * Runs on one server (a `crawl dev-server` over their output directory) share their sources'
   * monitors, and are left to them.
   */
  earlierOverlap(): Overlap | undefined {
    let names: string[];
    try {
      names = fs.readdirSync(this.dir).filter((n) => n.endsWith('.json'));
    } catch {
      return undefined;
    }
    const mine = new Set(this.entry.origins);
    for (const name of names) {
      const file = path.join(this.dir, name);
      if (file === this.file) continue;
      let other: Entry;
      try {
        other = JSON.parse(fs.readFileSync(file, 'utf8')) as Entry;
      } catch {
        continue; // another user's file we may not read, or one being removed
      }
      if (!alive(other)) {
        try {
          fs.rmSync(file, { force: true }); // a run killed outright leaves its file
        } catch {
          // Another user's: the directory's sticky bit keeps it from us.
        }
        continue;
      }
      const later = other.pid === this.entry.pid ? other.seq > this.entry.seq
        : other.registeredMs > this.entry.registeredMs || (other.registeredMs === this.entry.registeredMs && other.pid > this.entry.pid);
      if (later || other.server === this.entry.server) continue;
      const shared = other.origins.filter((o) => mine.has(o));
      if (shared.length === 0) continue;
      return { pid: other.pid, out: other.out, registeredMs: Math.floor(other.registeredMs), shown: shared.slice(0, SHOWN), count: shared.length };
    }
    return undefined;
  }

  remove(): void {
    fs.rmSync(this.file, { force: true });
  }
}

/** Why a run does not start beside another that has its sites, and what to do. */
export function overlapRefusal(o: Overlap): string {
  const sites = `${o.shown.join(', ')}${o.count > o.shown.length ? ` and ${o.count - o.shown.length} more` : ''}`;
  return `another crawl run on this machine (pid ${o.pid}, --out ${o.out}, since ${new Date(o.registeredMs).toISOString()}) is crawling ${o.count} of this manifest's site(s): ${sites}. ` +
    'Each run holds a site to its rate on its own, so the two together would send it twice what it bears. Nothing was started: ' +
    `run this manifest once that run has ended (into its --out, ${o.out}, to keep one output: the URLs it crawled are not asked for again)`;
}
