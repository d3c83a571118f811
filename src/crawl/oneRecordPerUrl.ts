import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fingerprint53, fingerprint53Ascii } from '../shared/seenUrls';

/**
 * One source's record files, held until the source is read whole, then given back with each
 * URL's superseded records left out. A URL has more than one record when it was asked again
 * after an answer that was not an image (the README's way on after a wall: a second manifest of
 * a halted source's walled URLs): its records then say what happened at each try, and the
 * export is to hold what is known of the URL now.
 *
 * The record kept: a `done` one (its image and analysis are in the store, whatever a later
 * try met), else the latest by `recordedAt`, else the last read.
 *
 * Most sources have no URL twice, so finding them must cost little: a 53-bit fingerprint of
 * each record's URL (8 bytes per record, sorted once); only the lines whose fingerprint occurs
 * twice are parsed, and they are compared by their URL itself, so a fingerprint collision
 * leaves both records in. A file added as not to be shown (written before an export's
 * `--since`) still takes part in deciding which record each URL keeps, but none of its lines is
 * given back. The texts are kept in memory up to MEMORY_BYTES, beyond that in a
 * temporary file, so a source of millions of records costs disk, not heap.
 */

const MEMORY_BYTES = 64 * 1024 * 1024;

type Piece = Buffer | { offset: number; bytes: number };

/** A line of a piece: its bytes [start, end), without the newline. */
interface LineAt { buf: Buffer; start: number; end: number }

export class OneRecordPerUrl {
  private fingerprints = new Float64Array(1024);
  private count = 0;
  private readonly pieces: Piece[] = [];
  /** Pieces whose lines texts() gives back (see add). */
  private readonly shown: boolean[] = [];
  private held = 0;
  private spill?: { file: string; fd: number; offset: number };
  /** Records left out by the last texts(). */
  superseded = 0;

  constructor(private readonly tmpDir = os.tmpdir(), private readonly memoryBytes = MEMORY_BYTES) {}

  /**
   * One record file's bytes (NDJSON, UTF-8), kept as they are: read back, they cost no encoding.
   * @param shown false: its records count in which record a URL keeps, but are not given back
   */
  add(body: Buffer, shown = true): void {
    // The pass every record takes, so without a string or an object per line.
    for (let start = 0; start < body.length;) {
      let end = body.indexOf(0x0a, start);
      if (end < 0) end = body.length;
      const fp = end > start ? urlFingerprint({ buf: body, start, end }) : undefined;
      if (fp !== undefined) this.push(fp);
      start = end + 1;
    }
    if (!this.spill && this.held + body.length > this.memoryBytes) {
      const file = path.join(this.tmpDir, `crawl-export-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}.tmp`);
      this.spill = { file, fd: fs.openSync(file, 'wx+', 0o600), offset: 0 };
    }
    this.shown.push(shown);
    if (!this.spill) {
      this.pieces.push(body);
      this.held += body.length;
      return;
    }
    fs.writeSync(this.spill.fd, body, 0, body.length, this.spill.offset);
    this.pieces.push({ offset: this.spill.offset, bytes: body.length });
    this.spill.offset += body.length;
  }

  /** The texts shown, each without the records a later (or `done`) record of its URL supersedes. */
  *texts(): Generator<string> {
    this.superseded = 0;
    const twice = this.fingerprintsSeenTwice();
    if (twice.size === 0) {
      for (let i = 0; i < this.pieces.length; i++) if (this.shown[i]) yield this.piece(i).toString('utf8');
      return;
    }
    // Which line of each URL seen twice is kept, by the order of lines across all pieces.
    const kept = new Map<string, Standing>();
    const seenTwice = (line: LineAt) => twice.has(urlFingerprint(line) ?? -1);
    let n = 0;
    for (let i = 0; i < this.pieces.length; i++) {
      for (const line of lines(this.piece(i))) {
        const at = n++;
        if (!seenTwice(line)) continue;
        const url = urlOf(line)!;
        const mine = standing(line, at);
        const best = kept.get(url);
        if (!best || outranks(mine, best)) kept.set(url, mine);
      }
    }
    n = 0;
    for (let i = 0; i < this.pieces.length; i++) {
      if (!this.shown[i]) {
        // Only its place in the order of lines is needed.
        n += lineCount(this.piece(i));
        continue;
      }
      const out: Buffer[] = [];
      for (const line of lines(this.piece(i))) {
        const at = n++;
        if (seenTwice(line) && kept.get(urlOf(line)!)!.line !== at) {
          this.superseded++;
          continue;
        }
        out.push(line.buf.subarray(line.start, line.end), NEWLINE);
      }
      if (out.length) yield Buffer.concat(out).toString('utf8');
    }
  }

  /** Frees the memory and removes the temporary file. */
  close(): void {
    this.pieces.length = 0;
    this.shown.length = 0;
    this.fingerprints = new Float64Array(0);
    if (this.spill) {
      fs.closeSync(this.spill.fd);
      fs.rmSync(this.spill.file, { force: true });
      this.spill = undefined;
    }
  }

  private piece(i: number): Buffer {
    const p = this.pieces[i]!;
    if (Buffer.isBuffer(p)) return p;
    const buf = Buffer.allocUnsafe(p.bytes);
    fs.readSync(this.spill!.fd, buf, 0, p.bytes, p.offset);
    return buf;
  }

  private push(fp: number): void {
    if (this.count === this.fingerprints.length) {
      const grown = new Float64Array(this.fingerprints.length * 2);
      grown.set(this.fingerprints);
      this.fingerprints = grown;
    }
    this.fingerprints[this.count++] = fp;
  }

  private fingerprintsSeenTwice(): Set<number> {
    const sorted = this.fingerprints.subarray(0, this.count).sort();
    const twice = new Set<number>();
    for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) twice.add(sorted[i]!);
    return twice;
  }
}

const NEWLINE = Buffer.from('\n');
const URL_FIRST = Buffer.from('{"url":"');

function* lines(buf: Buffer): Generator<LineAt> {
  let start = 0;
  for (let end = buf.indexOf(0x0a); end >= 0; end = buf.indexOf(0x0a, start)) {
    if (end > start) yield { buf, start, end };
    start = end + 1;
  }
  if (start < buf.length) yield { buf, start, end: buf.length };
}

/** How many lines lines(buf) gives. */
function lineCount(buf: Buffer): number {
  let n = 0;
  for (const _line of lines(buf)) n++;
  return n;
}

/**
 * The record's `url` as written. Records are written with `url` first, and a URL as the WHATWG
 * parser gives it is ASCII without `"` or `\` (the rest is percent-encoded), so the common case
 * is a slice of bytes; any other line is parsed. Both records of one URL take the same way, as
 * they are written alike.
 */
function urlOf({ buf, start, end }: LineAt): string | undefined {
  const from = urlStart(buf, start, end);
  if (from >= 0) return buf.toString('latin1', from, buf.indexOf(0x22, from));
  try {
    const r = JSON.parse(buf.toString('utf8', start, end)) as { url?: unknown } | null;
    return r && typeof r.url === 'string' ? r.url : undefined;
  } catch {
    return undefined; // not a record: passed on as it is
  }
}

/** The fingerprint of the line's URL (see urlOf), without making a string of it where it can be sliced; undefined for a line that is not a record. */
function urlFingerprint(line: LineAt): number | undefined {
  const from = urlStart(line.buf, line.start, line.end);
  if (from >= 0) return fingerprint53Ascii(line.buf, from, line.buf.indexOf(0x22, from));
  const url = urlOf(line);
  return url === undefined ? undefined : fingerprint53(url);
}

/** Where the line's URL starts when it can be sliced as it is (see urlOf), else -1. */
function urlStart(buf: Buffer, start: number, end: number): number {
  const from = start + URL_FIRST.length;
  if (from >= end) return -1;
  for (let i = 0; i < URL_FIRST.length; i++) if (buf[start + i] !== URL_FIRST[i]) return -1;
  const quote = buf.indexOf(0x22, from);
  if (quote <= from || quote >= end || buf[quote - 1] === 0x5c) return -1;
  for (let i = from; i < quote; i++) if (buf[i]! >= 0x80) return -1;
  return from;
}

/** What decides which of a URL's records is kept: done first, then the latest, then the last read. */
interface Standing { line: number; done: boolean; at: string }

function standing(line: LineAt, at: number): Standing {
  let r: { outcome?: unknown; recordedAt?: unknown } = {};
  try {
    r = JSON.parse(line.buf.toString('utf8', line.start, line.end)) as typeof r;
  } catch {
    // unreadable past its url: ranks below any readable record of the URL
  }
  return { line: at, done: r.outcome === 'done', at: typeof r.recordedAt === 'string' ? r.recordedAt : '' };
}

function outranks(a: Standing, b: Standing): boolean {
  if (a.done !== b.done) return a.done;
  if (a.at !== b.at) return a.at > b.at;
  return a.line > b.line;
}
