import path from 'node:path';
import { sourceSegment } from '../pipeline/keys';
import type { ObjectStore } from '../pipeline/store';
import { RECORD_OUTCOMES } from '../activities/outcomeRecord';
import { OneRecordPerUrl } from './oneRecordPerUrl';
import type { ManifestJoin } from './manifestJoin';
import { recordOfLine, RecordsCsv } from './recordsCsv';
import { replaceFile } from '../shared/replaceFile';
import { RecentFiles } from './exportSince';

/**
 * Metadata records live in the store as one NDJSON object per unit of work under
 * `records/<source>/` (`<chunk>/<batch run>-g<grant>.ndjson`), local directory or S3 alike. This
 * joins them into one NDJSON stream: every source's, or the named ones', in key order, with one
 * record per URL of a source unless every record is asked for.
 */

export interface ExportSummary {
  records: number;
  /** Record files read. */
  units: number;
  /** Named sources that have no record file (yet). */
  sourcesWithoutRecords: string[];
  /** Records left out because a later (or `done`) record of the same URL and source supersedes them (see OneRecordPerUrl). */
  superseded: number;
  /** CSV, a join or an outcome filter only: lines of the record files that were not a JSON object, left out. */
  notRecords?: number;
  /** With an outcome filter: the records of other outcomes, left out. */
  otherOutcomes?: number;
  /** With `since`: record files written before it, whose records were left out. */
  olderFiles?: number;
  /** With `given`: record files an earlier export gave, not written since, left out. */
  givenFiles?: number;
  /** With `since` or `newest`: the newest files listed, for where the next export starts (RecentFiles.next). */
  recent?: RecentFiles;
}

export type ExportFormat = 'ndjson' | 'csv';

export interface ExportOptions {
  /** Sees each piece of text as it is written (see FailureTally). */
  inspect?: (text: string) => void;
  /** Every record, a URL asked again keeping each of its records (its history), instead of one per URL. */
  allRecords?: boolean;
  /** Where a large source's records wait while it is read (default: the system's). */
  tmpDir?: string;
  /** What is written: the records' own NDJSON lines (default), or CSV rows under a header (see RecordsCsv). */
  format?: ExportFormat;
  /** Only the records of this manifest's URLs, each with its line and fields (see ManifestJoin). */
  join?: ManifestJoin;
  /** Only the records with these outcomes (`done`, `linkrot`, ...). */
  outcomes?: ReadonlySet<string>;
  /**
   * Only the records in files written to the store at or after this time (ms since the epoch,
   * by the store's clock): what is new since an earlier export. A URL's record is still the one
   * it keeps among all its records, given when that one is new.
   */
  since?: number;
  /** Files at or after `since` given by an earlier export (see Cursor): left out unless written again since. */
  given?: ReadonlyMap<string, number>;
  /** Learn the newest files without `since` (a first export that starts a cursor). */
  newest?: boolean;
}

/** Record files fetched at once: on S3 each is a round trip. Written in key order all the same. */
const PREFETCH = 16;

export async function exportRecords(store: ObjectStore, write: (text: string) => Promise<void> | void, sources: readonly string[] = [], opts: ExportOptions = {}): Promise<ExportSummary> {
  const named = [...new Set(sources)];
  const prefixes = named.length ? named.map((s) => `records/${sourceSegment(s)}/`) : ['records/'];
  const summary: ExportSummary = { records: 0, units: 0, sourcesWithoutRecords: [], superseded: 0 };
  const join = opts.join;
  const csv = opts.format === 'csv' ? new RecordsCsv(join?.fieldNames) : undefined;
  if (csv) await write(csv.header());
  const emit = async (text: string): Promise<void> => {
    opts.inspect?.(text);
    if (!csv && !join && !opts.outcomes) {
      summary.records += countLines(text);
      await write(text.endsWith('\n') ? text : `${text}\n`);
      return;
    }
    // Parsed a piece at a time: a source's held text can be tens of megabytes, and its records
    // parsed at once took ~1 GB.
    for (let piece of linePieces(text, PARSED_PIECE_LINES)) {
      if (opts.outcomes) piece = withOutcomes(piece, opts.outcomes, summary);
      if (!piece) continue;
      let out: string;
      if (csv) out = join ? csv.rowsOf(joinedRecords(piece, join, summary)) : csv.rows(piece);
      else if (join) out = joinedLines(piece, join, summary);
      else {
        out = piece;
        summary.records += countLines(piece);
      }
      if (out) await write(out);
    }
  };
  const since = opts.since;
  const timed = since !== undefined || opts.newest === true;
  if (timed && !store.listModified) throw new Error(`the ${store.description} cannot say when its files were written`);
  const recent = timed ? (summary.recent = new RecentFiles()) : undefined;
  for (const [i, prefix] of prefixes.entries()) {
    const keys: string[] = [];
    const written = new Map<string, number>();
    if (timed) {
      for await (const o of store.listModified!(prefix)) {
        if (!o.key.endsWith('.ndjson')) continue;
        keys.push(o.key);
        written.set(o.key, o.modifiedMs);
        recent!.add(o.key, o.modifiedMs);
      }
    } else {
      for await (const key of store.list(prefix)) if (key.endsWith('.ndjson')) keys.push(key);
    }
    if (named.length && keys.length === 0) summary.sourcesWithoutRecords.push(named[i]!);
    keys.sort();
    const fresh = new Set<string>();
    for (const key of keys) {
      const at = written.get(key)!;
      if (since === undefined) fresh.add(key);
      else if (at < since) summary.olderFiles = (summary.olderFiles ?? 0) + 1;
      else if (opts.given?.get(key) === at) summary.givenFiles = (summary.givenFiles ?? 0) + 1;
      else fresh.add(key);
    }
    const isNew = (key: string) => fresh.has(key);
    // records/<source>/...: a URL's records are all under its source's directory.
    for (const allKeys of bySource(keys)) {
      const newKeys = allKeys.filter(isNew);
      // Nothing new: no record the source's URLs keep can be. Otherwise the older files are read
      // too, to learn which record each URL keeps, unless every record is wanted.
      if (newKeys.length === 0) continue;
      const sourceKeys = opts.allRecords ? newKeys : allKeys;
      const held = opts.allRecords ? undefined : new OneRecordPerUrl(opts.tmpDir);
      try {
        for (let k = 0; k < sourceKeys.length; k += PREFETCH) {
          const batch = sourceKeys.slice(k, k + PREFETCH);
          const bodies = await Promise.all(batch.map((key) => store.get(key)));
          for (const [j, body] of bodies.entries()) {
            if (!body) continue; // removed since it was listed
            if (body.length === 0) continue; // a retried unit that found nothing left to record
            const shown = isNew(batch[j]!);
            if (shown) summary.units += 1;
            if (held) held.add(body, shown);
            else await emit(body.toString('utf8'));
          }
        }
        if (held) {
          for (const text of held.texts()) await emit(text);
          summary.superseded += held.superseded;
        }
      } finally {
        held?.close();
      }
    }
  }
  if (csv) {
    summary.records = csv.written;
    summary.notRecords = (summary.notRecords ?? 0) + csv.notRecords;
  }
  return summary;
}

/** Records parsed at once. */
const PARSED_PIECE_LINES = 1_000;

/** `text` in pieces of whole lines, `lines` at a time. */
function* linePieces(text: string, lines: number): Generator<string> {
  let start = 0;
  while (start < text.length) {
    let end = start;
    for (let n = 0; n < lines; n++) {
      const lineEnd = text.indexOf('\n', end);
      if (lineEnd < 0) {
        end = text.length;
        break;
      }
      end = lineEnd + 1;
    }
    yield text.slice(start, end);
    start = end;
  }
}

/** The record lines in `text` that `join` has, each with its manifest line, as NDJSON. */
function joinedLines(text: string, join: ManifestJoin, summary: ExportSummary): string {
  let out = '';
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (!trimmed) continue;
    let kept = join.attachLine(trimmed);
    if (kept === false) {
      // Not as the crawl writes records (a store of another version): parsed whole.
      const record = parsedRecord(trimmed, summary);
      const attached = record && join.attach(record);
      kept = attached ? JSON.stringify(attached) : undefined;
    }
    if (kept === undefined) continue;
    out += `${kept}\n`;
    summary.records += 1;
  }
  return out;
}

/** The records in `text` that `join` has, each with its manifest line. */
function joinedRecords(text: string, join: ManifestJoin, summary: ExportSummary): Record<string, unknown>[] {
  const records: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const record = parsedRecord(line, summary);
    const attached = record && join.attach(record);
    if (attached) records.push(attached);
  }
  return records;
}

/** The record lines of `text` whose outcome is one of `outcomes`; the rest are counted. */
function withOutcomes(text: string, outcomes: ReadonlySet<string>, summary: ExportSummary): string {
  let out = '';
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const record = parsedRecord(line, summary);
    if (!record) continue;
    if (typeof record.outcome === 'string' && outcomes.has(record.outcome)) out += `${line}\n`;
    else summary.otherOutcomes = (summary.otherOutcomes ?? 0) + 1;
  }
  return out;
}

/** `--outcome done,linkrot`: the outcomes named, each one a record can have. */
export function outcomesOption(value: string): Set<string> {
  const named = value.split(',').map((o) => o.trim().toLowerCase()).filter(Boolean);
  const unknown = named.filter((o) => !(RECORD_OUTCOMES as readonly string[]).includes(o));
  if (!named.length || unknown.length) {
    throw new Error(`--outcome ${JSON.stringify(value)}: ${unknown.length ? `${unknown.join(', ')} is no outcome; ` : ''}give one or more of ${RECORD_OUTCOMES.join(', ')}, separated by commas`);
  }
  return new Set(named);
}

/** A record line's object, or undefined (counted) for a line that is not one. */
function parsedRecord(line: string, summary: ExportSummary): Record<string, unknown> | undefined {
  const record = recordOfLine(line);
  if (!record) summary.notRecords = (summary.notRecords ?? 0) + 1;
  return record;
}

/** Sorted keys, cut where the source directory changes. */
function* bySource(keys: string[]): Generator<string[]> {
  let start = 0;
  for (let i = 1; i <= keys.length; i++) {
    if (i === keys.length || sourceDir(keys[i]!) !== sourceDir(keys[start]!)) {
      if (i > start) yield keys.slice(start, i);
      start = i;
    }
  }
}

function sourceDir(key: string): string {
  return key.slice(0, key.indexOf('/', 'records/'.length) + 1);
}

/** exportRecords into a file, replaced whole once complete (a reader never sees half of it). */
export async function exportRecordsToFile(store: ObjectStore, file: string, sources: readonly string[] = [], opts: ExportOptions = {}): Promise<ExportSummary> {
  return replaceFile(file, (write) => exportRecords(store, write, sources, { tmpDir: path.dirname(file), ...opts }));
}

/** What an export left out, for its closing line: empty when nothing was. */
export function supersededNote(summary: ExportSummary): string {
  const notes: string[] = [];
  if (summary.superseded) notes.push(`${summary.superseded} earlier record(s) of URLs asked again left out, each URL keeping its done or else latest record`);
  if (summary.otherOutcomes) notes.push(`${summary.otherOutcomes} record(s) of other outcomes left out`);
  if (summary.notRecords) notes.push(`${summary.notRecords} line(s) of the record files not a JSON record, left out (a plain \`crawl export\` writes them as they are)`);
  return notes.map((n) => `; ${n}`).join('');
}

/** The most rows Excel and LibreOffice Calc open, the header's included. */
const SPREADSHEET_ROWS = 1_048_576;

/** `crawl export`'s closing line: what it wrote where, and what it left out. */
export function exportedLine(summary: ExportSummary, storeDescription: string, opts: {
  out?: string; format: ExportFormat; join?: ManifestJoin; filtered?: boolean;
  /** `--since`'s time, and where the next export starts (see nextSince), in the cursor file or not. */
  since?: number; next?: { at: number; cursor?: string };
}): string {
  const as = [opts.format === 'csv' ? ' as CSV' : '', opts.out && /\.gz$/i.test(opts.out) ? ' gzip-compressed' : ''].filter(Boolean).join(',');
  const tooMany = opts.format === 'csv' && summary.records >= SPREADSHEET_ROWS
    ? `; more rows than a spreadsheet opens (Excel and LibreOffice Calc: ${SPREADSHEET_ROWS.toLocaleString('en-US')} with the header): a database's CSV import reads them all, or export sources apart (\`crawl export SOURCE --out FILE\`)`
    : '';
  const written = opts.since === undefined ? '' : ` written since ${new Date(opts.since).toISOString()}`;
  return `${summary.records} record(s) from ${summary.units} file(s)${written} in the ${storeDescription}${opts.out ? ` written to ${opts.out}${as}` : ''}` +
    `${supersededNote(summary)}${opts.join ? joinNote(opts.join, opts.filtered ?? false, opts.since) : ''}${tooMany}${sinceNote(summary, opts)}`;
}

/** What `--since` left out, and where the next export starts. */
function sinceNote(summary: ExportSummary, opts: { since?: number; next?: { at: number; cursor?: string } }): string {
  const notes: string[] = [];
  if (summary.olderFiles) notes.push(`${summary.olderFiles} file(s) written before it left out`);
  if (summary.givenFiles) notes.push(`${summary.givenFiles} file(s) the last export gave left out`);
  if (opts.next) {
    const at = new Date(opts.next.at).toISOString();
    // A time alone names no file given: the files of the minutes before the newest (see
    // CURSOR_OVERLAP_MS) come again; the cursor file names them.
    notes.push(opts.next.cursor !== undefined ? `the cursor ${opts.next.cursor} now starts at ${at}` : `what is written after this (with the last minutes' again): --since ${at}`);
  }
  return notes.map((n) => `; ${n}`).join('');
}

/** What a join with a manifest left out, for the export's closing line. */
function joinNote(join: ManifestJoin, filtered: boolean, since: number | undefined): string {
  const notes = [`joined to ${join.manifest}`];
  if (join.notInManifest) notes.push(`${join.notInManifest} record(s) of URLs it does not list left out`);
  if (join.withoutRecord) {
    const none = since !== undefined ? `no record${filtered ? ' of those outcomes' : ''} written since then`
      : filtered ? 'no record of those outcomes' : 'no record yet (not crawled yet, or their source was stopped; see `crawl status`)';
    notes.push(`${join.withoutRecord} of its ${join.urls} URL(s) have ${none}`);
  }
  return notes.map((n) => `; ${n}`).join('');
}

/** The format `--format` names, else the one `--out`'s file name ends in (`.csv`, `.csv.gz`), else NDJSON. */
export function exportFormat(format: string | undefined, out: string | undefined): ExportFormat {
  if (format === undefined) return out && /\.csv(\.gz)?$/i.test(out) ? 'csv' : 'ndjson';
  const f = format.toLowerCase();
  if (f === 'csv' || f === 'ndjson') return f;
  if (f === 'json' || f === 'jsonl') return 'ndjson';
  throw new Error(`--format ${format}: give csv or ndjson`);
}

function countLines(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return text.endsWith('\n') ? n : n + 1;
}
