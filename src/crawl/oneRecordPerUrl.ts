import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

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
 * Most sources have no URL twice, so finding them must cost little: a 52-bit fingerprint of
 * each record's URL (8 bytes per record, sorted once); only the lines whose fingerprint occurs
 * twice are parsed, and they are compared by their URL itself, so a fingerprint collision
 * leaves both records in. The texts are kept in memory up to MEMORY_BYTES, beyond that in a
 * temporary file, so a source of millions of records costs disk, not heap.
 */

const MEMORY_BYTES = 32 * 1024 * 1024;

type Piece = string | { offset: number; bytes: number };

export class OneRecordPerUrl {
  private fingerprints = new Float64Array(1024);
  private count = 0;
  private readonly pieces: Piece[] = [];
  private held = 0;
  private spill?: { file: string; fd: number; offset: number };
  /** Records left out by the last texts(). */
  superseded = 0;

  constructor(private readonly tmpDir = os.tmpdir(), private readonly memoryBytes = MEMORY_BYTES) {}

  /** One record file's text (NDJSON). */
  add(text: string): void {
    for (const line of lines(text)) {
      const url = urlOf(line);
      if (url !== undefined) this.push(fingerprint(url));
    }
    if (!this.spill && this.held + text.length > this.memoryBytes) {
      const file = path.join(this.tmpDir, `crawl-export-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}.tmp`);
      this.spill = { file, fd: fs.openSync(file, 'wx+', 0o600), offset: 0 };
    }
    if (!this.spill) {
      this.pieces.push(text);
      this.held += text.length;
      return;
    }
    const bytes = Buffer.from(text, 'utf8');
    fs.writeSync(this.spill.fd, bytes, 0, bytes.length, this.spill.offset);
    this.pieces.push({ offset: this.spill.offset, bytes: bytes.length });
    this.spill.offset += bytes.length;
  }

  /** The texts as added, each without the records a later (or `done`) record of its URL supersedes. */
  *texts(): Generator<string> {
    this.superseded = 0;
    const twice = this.fingerprintsSeenTwice();
    if (twice.size === 0) {
      for (let i = 0; i < this.pieces.length; i++) yield this.piece(i);
      return;
    }
    // Which line of each URL seen twice is kept, by the order of lines across all pieces.
    const kept = new Map<string, { line: number; done: boolean; at: string }>();
    let n = 0;
    for (let i = 0; i < this.pieces.length; i++) {
      for (const line of lines(this.piece(i))) {
        const at = n++;
        const url = urlOf(line);
        if (url === undefined || !twice.has(fingerprint(url))) continue;
        const mine = standing(line, at);
        const best = kept.get(url);
        if (!best || outranks(mine, best)) kept.set(url, mine);
      }
    }
    n = 0;
    for (let i = 0; i < this.pieces.length; i++) {
      let out = '';
      for (const line of lines(this.piece(i))) {
        const at = n++;
        const url = urlOf(line);
        if (url !== undefined && twice.has(fingerprint(url)) && kept.get(url)!.line !== at) {
          this.superseded++;
          continue;
        }
        out += `${line}\n`;
      }
      if (out) yield out;
    }
  }

  /** Frees the memory and removes the temporary file. */
  close(): void {
    this.pieces.length = 0;
    this.fingerprints = new Float64Array(0);
    if (this.spill) {
      fs.closeSync(this.spill.fd);
      fs.rmSync(this.spill.file, { force: true });
      this.spill = undefined;
    }
  }

  private piece(i: number): string {
    const p = this.pieces[i]!;
    if (typeof p === 'string') return p;
    const buf = Buffer.allocUnsafe(p.bytes);
    fs.readSync(this.spill!.fd, buf, 0, p.bytes, p.offset);
    return buf.toString('utf8');
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

function* lines(text: string): Generator<string> {
  let start = 0;
  for (let end = text.indexOf('\n'); end >= 0; end = text.indexOf('\n', start)) {
    if (end > start) yield text.slice(start, end);
    start = end + 1;
  }
  if (start < text.length) yield text.slice(start);
}

/**
 * The record's `url` as written. Records are written with `url` first, and a URL as the WHATWG
 * parser gives it has no `"` or `\` (they are percent-encoded), so the common case is a slice; any
 * other line is parsed. Both records of one URL take the same way, as they are written alike.
 */
function urlOf(line: string): string | undefined {
  if (line.startsWith('{"url":"')) {
    const end = line.indexOf('"', 8);
    if (end > 8 && line.charCodeAt(end - 1) !== 0x5c) return line.slice(8, end);
  }
  try {
    const r = JSON.parse(line) as { url?: unknown } | null;
    return r && typeof r.url === 'string' ? r.url : undefined;
  } catch {
    return undefined; // not a record: passed on as it is
  }
}

/** Two FNV-1a style hashes of the URL's UTF-16 units: 20 bits of one and 32 of the other, exact in a double. */
function fingerprint(url: string): number {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < url.length; i++) {
    const c = url.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  return (a >>> 12) * 0x100000000 + (b >>> 0);
}

function standing(line: string, at: number): { line: number; done: boolean; at: string } {
  let r: { outcome?: unknown; recordedAt?: unknown } = {};
  try {
    r = JSON.parse(line) as typeof r;
  } catch {
    // unreadable past its url: ranks below any readable record of the URL
  }
  return { line: at, done: r.outcome === 'done', at: typeof r.recordedAt === 'string' ? r.recordedAt : '' };
}

function outranks(a: { line: number; done: boolean; at: string }, b: { line: number; done: boolean; at: string }): boolean {
  if (a.done !== b.done) return a.done;
  if (a.at !== b.at) return a.at > b.at;
  return a.line > b.line;
}
