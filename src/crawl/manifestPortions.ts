import { createHash, type Hash } from 'node:crypto';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { ObjectStore } from '../pipeline/store';
import { formatHint } from './manifest';
import { manifestBytes } from './manifestBytes';

/**
 * Which earlier manifest a manifest continues. Users grow a manifest by appending lines and start
 * it again; with an id from the whole file, every URL in it was crawled a second time (a million
 * requests to sites that had served them already). A manifest whose first bytes are exactly an
 * earlier manifest (ending with a line break) is split as that manifest's lines, under that
 * manifest's chunk ids and done-markers, then the lines after them under its own id.
 *
 * The portions of a manifest are fixed the first time it is started (its record in the store):
 * chunk n of a portion must hold the same URLs on every start, and which earlier manifests the
 * store knows may change between starts.
 */

/**
 * Bumped whenever the rules that turn manifest lines into chunk URLs change (which lines are
 * bad, how URLs are normalised and deduplicated). Chunk n of a manifest must hold the same URLs
 * on every start: after a rule change a re-run would find chunk n's done-marker over a different
 * set of URLs and skip URLs never crawled. With the rules in the id, a manifest re-run across
 * such a change is a new crawl instead (v2: fragments dropped, URLs with tabs refused; v3: the
 * file name's format hint is part of the id, since `urls.csv` and `urls.txt` with the same bytes
 * are read differently).
 */
const MANIFEST_RULES = 'v3';
/**
 * Added for CSV manifests only, so that the others keep their ids: csv-columns, a row with more
 * cells than its header is a bad line (it was read, an unquoted comma having cut its URL short).
 */
const CSV_RULES = 'csv-columns';
/**
 * Hashed after the bytes of a manifest whose text holds U+FFFD (bytes that are not UTF-8, as in a
 * Latin-1 export, decode to it), so that only such manifests get new ids: their lines with it are
 * bad ones now (`caf\xe9.jpg` was crawled as `caf%EF%BF%BD.jpg`).
 */
const NOT_UTF8_RULE = '\nrule not-utf8-lines-bad\n';
/**
 * Hashed after the bytes of a CSV manifest with a line of an odd number of double quotes (a
 * quoted cell going on in the next line, or a quote left open by mistake), so that only such
 * manifests get new ids: a record joined over lines is refused now when a line after its first
 * reads as a record of its own (their URLs were lost in a caption).
 */
const CSV_OWN_LINE_RULE = '\nrule csv-own-line-records\n';

/** Whether a CSV's lines hold an odd number of double quotes anywhere, read part by part. */
class OddQuoteLines {
  found = false;
  private open = false;

  take(part: Buffer): void {
    for (let at = 0; !this.found;) {
      const quote = part.indexOf(0x22, at);
      // Line breaks matter only within an odd run of quotes.
      if (this.open) {
        const lineBreak = part.indexOf(0x0a, at);
        if (lineBreak >= 0 && (quote < 0 || lineBreak < quote)) this.found = true;
      }
      if (quote < 0 || this.found) return;
      this.open = !this.open;
      at = quote + 1;
    }
  }
}

/** Lines 1..lastLine of the manifest (all the rest when null) are chunked under `id`. */
export interface ManifestPortion {
  id: string;
  lastLine: number | null;
}

export interface ManifestIdentity {
  id: string;
  portions: ManifestPortion[];
  /** The earlier manifest this one continues, when it does. */
  continues?: { lines: number; path: string };
  /**
   * How many bytes of text (see manifestBytes) the id is of, and their line breaks: a file still
   * being written has more by the time its lines are read, and those are not this manifest's.
   */
  bytes: number;
  lines: number;
  /** Where the last line break in those bytes ends (0 without one). */
  lastBreak: number;
}

interface ManifestRecord {
  id: string;
  bytes: number;
  /** Line breaks in the file: the line count when it ends with one. */
  lines: number;
  path: string;
  portions: ManifestPortion[];
  continues?: { lines: number; path: string };
}

const RECORDS = 'work/manifests/';

function recordKey(bytes: number, id: string): string {
  return `${RECORDS}${bytes}-${id}.json`;
}

async function newHash(file: string): Promise<{ hash: Hash; csv: boolean }> {
  const hash = createHash('sha256');
  // The same bytes named urls.csv and urls.txt are read differently, unless they begin with a
  // CSV header ('csv-header': such a file was read as a URL list before, a manifest of its own).
  const hint = await formatHint(file);
  const csv = hint === 'csv' || hint === 'csv-header';
  hash.update(`manifest-rules ${csv ? `${MANIFEST_RULES} ${CSV_RULES}` : MANIFEST_RULES}\nformat-hint ${hint}\n`);
  return { hash, csv };
}

const digest = (hash: Hash) => hash.digest('hex').slice(0, 16);

function parseRecord(text: string, key: string): ManifestRecord {
  const r = JSON.parse(text) as ManifestRecord;
  const portionsOk = Array.isArray(r.portions) && r.portions.length > 0 && r.portions.every((p, i) =>
    typeof p.id === 'string' && /^[0-9a-f]{16}$/.test(p.id) && (i === r.portions.length - 1 ? p.lastLine === null : Number.isInteger(p.lastLine)));
  if (!portionsOk || typeof r.id !== 'string' || !Number.isInteger(r.lines) || typeof r.path !== 'string') {
    throw new Error(`the store's record of an earlier manifest, ${key}, is not valid; remove it only if no crawl of that manifest is to be continued`);
  }
  return r;
}

/**
 * The manifest's id and portions: one listing of the store's manifest records and one pass over
 * the file, hashing it and taking the hash at each length an earlier manifest had.
 */
export async function identifyManifest(file: string, store: ObjectStore): Promise<ManifestIdentity> {
  /**
   * Earlier manifests by length: candidates for its beginning. Lengths are of the text's bytes
   * (a gzip or UTF-16 file's are known only as it is read), so the pass below meets those that
   * are shorter than this manifest, and no longer ones.
   */
  const known = new Map<number, Map<string, string>>();
  const listed = new Set<string>();
  for await (const key of store.list(RECORDS)) {
    const m = /^(\d+)-([0-9a-f]{16})\.json$/.exec(key.slice(RECORDS.length));
    if (!m) continue;
    listed.add(key);
    const bytes = Number(m[1]);
    if (bytes === 0) continue;
    const ids = known.get(bytes) ?? new Map<string, string>();
    known.set(bytes, ids.set(m[2]!, key));
  }
  const offsets = [...known.keys()].sort((a, b) => a - b);
  const { hash, csv } = await newHash(file);
  const oddQuotes = csv ? new OddQuoteLines() : undefined;
  let read = 0;
  let lineBreaks = 0;
  let next = 0;
  /** The longest earlier manifest this file begins with. */
  let base: { key: string; lines: number } | undefined;
  const text = new StringDecoder('utf8');
  let notUtf8 = false;
  let lastBreak = 0;
  let taken = 0;
  const take = (part: Buffer) => {
    hash.update(part);
    lineBreaks += count(part);
    const last = part.lastIndexOf(0x0a);
    if (last >= 0) lastBreak = taken + last + 1;
    taken += part.length;
    if (!notUtf8 && text.write(part).includes('\ufffd')) notUtf8 = true;
    oddQuotes?.take(part);
  };
  /** The id of what has been hashed: of the bytes so far, as a manifest of its own. */
  const idSoFar = (h: Hash) => {
    if (oddQuotes?.found) h.update(CSV_OWN_LINE_RULE);
    if (notUtf8) h.update(NOT_UTF8_RULE);
    return digest(h);
  };
  for await (const chunk of manifestBytes(file)) {
    let at = 0;
    while (next < offsets.length && offsets[next]! <= read + chunk.length) {
      const cut = offsets[next++]! - read;
      take(chunk.subarray(at, cut));
      at = cut;
      // Only at a line break: a manifest whose last line was then continued is a new line.
      const endsLine = chunk[cut - 1] === 0x0a;
      const key = endsLine ? known.get(read + cut)!.get(idSoFar(hash.copy())) : undefined;
      if (key) base = { key, lines: lineBreaks };
    }
    take(chunk.subarray(at));
    read += chunk.length;
  }
  if (text.end().includes('\ufffd')) notUtf8 = true;
  const id = idSoFar(hash);
  // The bytes hashed, not the size seen before: a file still being written has grown since.
  const ownKey = recordKey(read, id);
  if (listed.has(ownKey)) {
    const body = await store.get(ownKey);
    if (body) {
      const record = parseRecord(body.toString('utf8'), ownKey);
      return { id, portions: record.portions, ...(record.continues ? { continues: record.continues } : {}), bytes: read, lines: lineBreaks, lastBreak };
    }
  }
  let portions: ManifestPortion[] = [{ id, lastLine: null }];
  let continues: ManifestIdentity['continues'];
  if (base) {
    const body = await store.get(base.key);
    if (body) {
      const earlier = parseRecord(body.toString('utf8'), base.key);
      portions = [...earlier.portions.slice(0, -1), { id: earlier.id, lastLine: base.lines }, { id, lastLine: null }];
      continues = { lines: base.lines, path: earlier.path };
    }
  }
  const record: ManifestRecord = { id, bytes: read, lines: lineBreaks, path: path.resolve(file), portions, ...(continues ? { continues } : {}) };
  await store.put(ownKey, `${JSON.stringify(record)}\n`, 'application/json');
  return { id, portions, ...(continues ? { continues } : {}), bytes: read, lines: lineBreaks, lastBreak };
}

function count(buf: Buffer): number {
  let n = 0;
  for (let i = buf.indexOf(0x0a); i >= 0; i = buf.indexOf(0x0a, i + 1)) n++;
  return n;
}
