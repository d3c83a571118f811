import fs from 'node:fs';
import { CsvRecords, type CsvLine } from './csvRecords';
import { readLines } from './lineReader';
import { assertTextManifest, firstBytes, manifestBytes, manifestCompression } from './manifestBytes';
import { isPlainObject } from '../shared/plainObject';
import { shellWord } from '../shared/shellWord';
import { MAX_URL_CHARS, sentChars } from '../shared/urlLimits';

/**
 * Manifests are streamed line by line, never loaded whole. Formats: NDJSON ({"url", "source"?}),
 * CSV with a header naming a `url` column (and optionally `source`), or one URL per line; any of
 * them gzip-compressed (manifestBytes).
 * A bad line is reported with its number and reason and skipped; the rest proceeds.
 */

/** Longer lines are skipped as bad (a URL is at most a few KiB; servers refuse longer ones). */
export const MAX_LINE_CHARS = 64 * 1024;

/** `origin`: the URL's host with any port, as a source without a name is called. */
export type ManifestEntry = {
  line: number; url: string; source: string; origin: string;
  /** With readManifest's `withFields`: the line's own other fields (NDJSON keys, CSV columns) beside url and source. */
  fields?: Record<string, unknown>;
} | { line: number; error: string };
export type ManifestFormat = 'ndjson' | 'csv' | 'lines';

const NOT_UTF8 = 'has bytes that are not UTF-8 (a Latin-1 or Windows-1252 file, say) or the U+FFFD they become: save the manifest as UTF-8 (in Excel: "CSV UTF-8")';

/** What an http(s) URL starts with: a manifest named by one, and the cell or key that holds a manifest's URLs. */
const HTTP_URL = /^https?:\/\//i;

/** A file name for a manifest given by its URL: the URL's last path segment, else manifest.txt. */
function manifestNameOf(url: string): string {
  const last = url.replace(/[?#].*$/, '').split('/').pop() ?? '';
  return /^[\w.-]+\.\w+$/.test(last) ? last : 'manifest.txt';
}

/** Throws a message an operator can act on unless `file` is a readable regular file. */
export function assertReadableManifest(file: string): void {
  // A manifest is read more than once (to identify it, then its lines), which a pipe cannot be.
  const pipeHint = 'a manifest is read more than once, which a pipe cannot be: save it to a file; a gzip file is read as it is';
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    const why = file === '-' ? ` (standard input is not read: ${pipeHint})`
      : HTTP_URL.test(file) ? ` (a manifest is a file: download it first, such as with \`curl -fo ${shellWord(manifestNameOf(file))} ${shellWord(file)}\`)` : '';
    throw new Error(`manifest ${file} does not exist${why}`);
  }
  if (st.isDirectory()) throw new Error(`manifest ${file} is a directory, not a file`);
  if (!st.isFile()) throw new Error(`manifest ${file} is not a regular file (${st.isFIFO() || st.isSocket() ? pipeHint : 'a device or other special file'})`);
  try {
    fs.accessSync(file, fs.constants.R_OK);
  } catch {
    throw new Error(`manifest ${file} is not readable`);
  }
  assertTextManifest(file);
}

/**
 * Whether the file holds anything but blank space (a byte-order mark included). Reads only up to
 * the first such byte, so a manifest of any size costs one small read; an empty one can then
 * be answered without starting a server.
 */
export function manifestHasContent(file: string): boolean {
  // A gzip file's blank space is compressed too; its lines tell (a start of no URLs says so).
  if (manifestCompression(file) === 'gzip') return true;
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.alloc(64 * 1024);
    for (let first = true; ; first = false) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) return false;
      const start = first && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
      for (let i = start; i < n; i++) if (![0x20, 0x09, 0x0a, 0x0d].includes(buf[i]!)) return true;
    }
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The source a URL belongs to without an explicit one: its host with any port. `a.example.` and
 * `a.example` are one site (the trailing dot only makes the name fully qualified), so they are
 * one source: two would each get the site's whole rate.
 */
export function sourceOfUrl(u: URL): string {
  const host = u.hostname.toLowerCase().replace(/\.$/, '');
  return u.port ? `${host}:${u.port}` : host;
}

/**
 * The source a name means when it is written as a host (`Bücher.Example`, `MUSEUM.example.:8080`):
 * the name a URL of that host is crawled under (`xn--bcher-kva.example`, `museum.example:8080`).
 * Undefined for a name that is no host (a path, spaces, an address with credentials).
 */
export function hostSourceName(name: string): string | undefined {
  if (!name || /[\s/\\?#@]/.test(name)) return undefined;
  try {
    return sourceOfUrl(new URL(`http://${name}/`));
  } catch {
    return undefined;
  }
}

function checkUrl(raw: string): URL | string {
  // The URL parser removes tabs and line breaks wherever they are ("https://a/x.jpg<TAB>museum"
  // parses as https://a/x.jpgmuseum): the URL crawled would not be the one given.
  const ws = /[\t\r\n]/.exec(raw.trim());
  if (ws) return `URL contains a ${ws[0] === '\t' ? 'tab (a tab-separated file? write CSV with a "url" column, or NDJSON)' : 'line break'}: ${JSON.stringify(raw.slice(0, 120))}`;
  const notUrl = (hint: string) => `not a URL: ${JSON.stringify(raw.slice(0, 120))}${hint}`;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return notUrl(notUrlHint(raw.trim()));
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    // `a.example:8080/x.jpg` parses, with `a.example:` as its scheme.
    const hint = notUrlHint(raw.trim());
    return hint ? notUrl(hint) : `scheme ${u.protocol} not allowed (http and https only)`;
  }
  if (u.username || u.password) return 'credentials in URLs are not allowed';
  // A fragment is never sent to the server: x.jpg#a and x.jpg#b are one image, crawled once.
  u.hash = '';
  const chars = sentChars(u);
  if (chars > MAX_URL_CHARS) {
    return `URL of ${chars.toLocaleString('en-US')} characters (as sent, percent-encoded): at most ${MAX_URL_CHARS.toLocaleString('en-US')}, as a chunk of 500 travels in one workflow message of at most 2 MB`;
  }
  return u;
}

/** What a line that is almost a URL lacks: exports drop the scheme or keep quotes. */
function notUrlHint(raw: string): string {
  if (/^["'<].*["'>]$/.test(raw)) return ' (remove the quotes or brackets around it)';
  if (raw.startsWith('//') || /^[a-z0-9-]+(\.[a-z0-9-]+)+(:\d+)?([/?]|$)/i.test(raw)) return ' (no scheme: a URL starts with https:// or http://)';
  return '';
}

/** Names the value a source was given, so that a line's reason shows what to fix in it. */
function checkSource(s: unknown): string | undefined {
  if (typeof s !== 'string') return `source must be a name in quotes, such as "museum" (got ${JSON.stringify(s).slice(0, 60)})`;
  if (/^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/.test(s)) return undefined;
  const got = s.length > 60 ? `${JSON.stringify(s.slice(0, 60))}..., ${s.length} characters` : JSON.stringify(s);
  return `source must be 1-200 characters of letters, digits, ".", "_", ":" or "-", starting with a letter or digit (got ${got})`;
}

/** Splits one CSV line (RFC 4180 quoting) at `separator`. */
export function splitCsv(line: string, separator = ','): string[] {
  return scanCsv(line, separator).cells;
}

/**
 * A CSV record's cells, and whether a quoted cell is still open at its end (its record goes on
 * in the next line). A quote opens a quoted cell only at the cell's start: inside an unquoted
 * cell (`x".jpg`) it is the character itself, as spreadsheets and Python's csv read it; taken
 * as an opening quote it joined the rest of the line, separators and all, into the URL.
 */
export function scanCsv(line: string, separator = ','): { cells: string[]; open: boolean } {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') { cur += '"'; i++; } else if (c === '"') quoted = false; else cur += c;
    } else if (c === '"' && cur.trim() === '') { cur = ''; quoted = true; }
    else if (c === separator) { out.push(cur); cur = ''; } else cur += c;
  }
  out.push(cur);
  return { cells: out.map((s) => s.trim()), open: quoted };
}

/** Cells up to the last non-empty one: trailing commas add no column. */
function filled(cells: string[]): number {
  let n = cells.length;
  while (n > 0 && cells[n - 1] === '') n--;
  return n;
}

/** The format the file's name gives, if any; the first line decides the rest. */
export function formatFromName(path: string): ManifestFormat | undefined {
  if (/\.(ndjson|jsonl)(\.gz)?$/i.test(path)) return 'ndjson';
  if (/\.csv(\.gz)?$/i.test(path)) return 'csv';
  return undefined;
}

/** What a CSV file's cells may be separated by: commas, `;` (Excel where the decimal mark is a comma), tabs, `|`. */
const CSV_SEPARATORS = [',', ';', '\t', '|'];

/**
 * The separator with which a line names a `column` (any case), when it is a header (commas or
 * not): a manifest's `url`, a catalogue's `name`.
 */
export function headerSeparator(line: string, column = 'url'): string | undefined {
  return CSV_SEPARATORS.find((d) => line.split(d).some((c) => c.trim().replace(/^"(.*)"$/, '$1').trim().toLowerCase() === column));
}

/**
 * Whether a manifest's first line is a CSV header naming a `url` column (also when its columns
 * are separated by something else, which the CSV reader then names as the problem). A URL list
 * never starts so; read as one, `urls.txt` exported as CSV crawled `https://a.example/1.jpg,museum`.
 */
export function isCsvHeader(line: string): boolean {
  return headerSeparator(line) !== undefined;
}

/**
 * The separator Excel's `sep=;` line names, for a CSV's first line (trimmed: `sep=` alone was
 * `sep=` and a tab), else undefined. Files written for Excel start so; the header follows.
 */
export function excelSeparatorLine(line: string): string | undefined {
  const m = /^sep=(.?)$/i.exec(line);
  if (!m) return undefined;
  const sep = m[1] || '\t';
  return CSV_SEPARATORS.includes(sep) ? sep : undefined;
}

export function detectFormat(path: string, firstLine: string): ManifestFormat {
  const named = formatFromName(path);
  if (named === 'ndjson' || firstLine.trimStart().startsWith('{')) return 'ndjson';
  if (excelSeparatorLine(firstLine) !== undefined) return 'csv';
  return named ?? (isCsvHeader(firstLine) ? 'csv' : 'lines');
}

/**
 * What, beyond the file's bytes, decides how its lines are read: the format its name gives, or
 * for a name that gives none, whether its first line is a CSV header (read from the file).
 */
export async function formatHint(path: string): Promise<string> {
  const named = formatFromName(path);
  if (named) return named;
  for await (const batch of readLines(manifestBytes(path), MAX_LINE_CHARS)) for (const read of batch) {
    if ('tooLong' in read) return 'none';
    const text = read.text.trim();
    if (text === '' || text.startsWith('#')) continue;
    return !text.startsWith('{') && (isCsvHeader(text) || excelSeparatorLine(text) !== undefined) ? 'csv-header' : 'none';
  }
  return 'none';
}

/**
 * What can be told of a manifest before anything starts: that it is a readable text file, and
 * that its first lines will not be misread as a whole (assertManifestShape).
 */
export async function checkManifest(file: string): Promise<void> {
  assertReadableManifest(file);
  await assertManifestShape(file);
}

/** An image URL, then a separator (a comma, `;`, `|` or spaces) and the rest of a line (tabs make a bad line of their own). */
const URL_THEN_MORE = /^(https?:\/\/[^\s,;|?#]+\.(?:jpe?g|png|gif|webp|avif|tiff?|heic|heif|bmp|svg))([,;|]| +)(.*)$/i;
const SHAPE_SAMPLE = 20;

/**
 * Throws, before anything starts, when a manifest's first lines (up to 20) show that the whole
 * file would be misread:
 * - a URL list whose every such line is an image URL followed by a comma (`;`, `|`) or spaces and
 *   more (a CSV export without its header line, columns separated by spaces): `https://a.example/1.jpg,museum`
 *   was crawled as that URL, comma and all, and each site answered 404. A list with only some
 *   such lines is read as before.
 * - NDJSON naming the source with another case of "source" ("Source"): keys are case-sensitive,
 *   and each URL went to its host's source without a word.
 * - JSON over several lines, and a CSV file whose header names no url column (below).
 * A manifest that passes is read exactly as before, so these checks change no manifest's id.
 */
export async function assertManifestShape(path: string): Promise<void> {
  let format: ManifestFormat | undefined;
  let first: { line: number; text: string; separator: string } | undefined;
  let header: { line: number; text: string } | undefined;
  let noUrl: { line: number; obj: Record<string, unknown> } | undefined;
  let withUrl = false;
  let seen = 0;
  let excelSep: string | undefined;
  lines: for await (const batch of readLines(manifestBytes(path), MAX_LINE_CHARS)) for (const read of batch) {
    if ('tooLong' in read) return;
    const text = read.text.trim();
    if (text === '' || text.startsWith('#')) continue;
    if (format === undefined) assertNotPrettyJson(path, read.line, text);
    format ??= detectFormat(path, text);
    if (format === 'csv') {
      if (!header && !excelSep && (excelSep = excelSeparatorLine(text)) !== undefined) continue;
      // Named .csv, its header names no url column: told with the first row, which shows where its URLs are.
      if (header) throwNoUrlColumn(path, header, text);
      if (isCsvHeader(text)) return;
      header = { line: read.line, text };
      continue;
    }
    if (format === 'ndjson') {
      const obj = sampledObject(path, read.line, text);
      if (obj && 'url' in obj) withUrl = true;
      else if (obj) noUrl ??= { line: read.line, obj };
      if (++seen === SHAPE_SAMPLE) break lines;
      continue;
    }
    if (format !== 'lines') return;
    const m = URL_THEN_MORE.exec(text);
    if (!m) return;
    first ??= { line: read.line, text, separator: m[2]!.trim() || ' ' };
    if (++seen === SHAPE_SAMPLE) return throwColumns(path, first);
  }
  if (first) throwColumns(path, first);
  if (header) throwNoUrlColumn(path, header);
  if (noUrl && !withUrl) throwNoUrlKey(path, noUrl);
}

/**
 * NDJSON whose first objects all name their URL otherwise (`"URL"`, `"image_url"`): every line
 * would be skipped, and it was said only after the embedded server had started.
 */
function throwNoUrlKey(path: string, first: { line: number; obj: Record<string, unknown> }): never {
  const keys = Object.keys(first.obj);
  const urlKey = keys.find((k) => typeof first.obj[k] === 'string' && HTTP_URL.test((first.obj[k] as string).trim()));
  const named = urlKey !== undefined ? `; its key ${JSON.stringify(urlKey)} holds URLs: name it "url" (keys are case-sensitive)` : ': give each line its image URL as "url"';
  throw new Error(`manifest ${path} is NDJSON whose lines name no "url" (line ${first.line} has ${keys.length ? keys.slice(0, 12).map((k) => JSON.stringify(k)).join(', ') : 'no keys'})${named}`);
}

/**
 * A CSV header without a `url` column (`image_url`, `link`): every line after it would be
 * skipped, and it was said only after the embedded server had started. The column whose first
 * row holds a URL is named.
 */
function throwNoUrlColumn(path: string, header: { line: number; text: string }, row?: string): never {
  if (HTTP_URL.test(header.text)) {
    throw new Error(`manifest ${path} is named .csv but has no header line (line ${header.line} is a URL: ${JSON.stringify(header.text.slice(0, 120))}): ` +
      'add a first line naming the columns (such as url,source), or name the file .txt for a list of URLs');
  }
  const count = (sep: string) => header.text.split(sep).length;
  const separator = CSV_SEPARATORS.reduce((best, sep) => (count(sep) > count(best) ? sep : best));
  const columns = splitCsv(header.text, separator);
  const urls = row === undefined ? -1 : splitCsv(row, separator).findIndex((c) => HTTP_URL.test(c));
  const named = urls >= 0 && columns[urls] ? `; its column ${JSON.stringify(columns[urls])} holds URLs: name it "url"` : ': name the column of image URLs "url"';
  throw new Error(`manifest ${path} is CSV whose header (line ${header.line}) names no "url" column (its columns: ${columns.slice(0, 12).join(', ')}${columns.length > 12 ? ', ...' : ''})${named}`);
}

/**
 * JSON written over several lines (`jq .`, `JSON.stringify(x, null, 2)`, Python's `indent=2`),
 * whose first line is a bracket alone: read line by line, every line was bad, and the file
 * was refused only after the embedded server had started. NDJSON is one object a line; the
 * error gives the jq command that writes it.
 */
function assertNotPrettyJson(path: string, line: number, text: string): void {
  if (text !== '[' && text !== '{') return;
  const [what, filter] = text === '[' ? ['a JSON array written over several lines', "'.[]'"] : ['JSON objects written over several lines each', '.'];
  // Never the file itself: `> FILE` empties it before jq reads it.
  const base = path.replace(/\.(json|ndjson|jsonl)$/i, '');
  const to = `${base}.ndjson` === path ? `${base}.lines.ndjson` : `${base}.ndjson`;
  throw new Error(`manifest ${path} holds ${what} (line ${line} is "${text}" alone), which is not read as a manifest: ` +
    `write one JSON object per line (NDJSON), such as with \`jq -c ${filter} ${shellWord(path)} > ${shellWord(to)}\``);
}

/**
 * A sampled NDJSON line's object (undefined for a bad line, reported as such when read), once its
 * source key is found not misspelt.
 */
function sampledObject(path: string, line: number, text: string): Record<string, unknown> | undefined {
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isPlainObject(obj)) return undefined;
  if ('source' in obj) return obj;
  const key = Object.keys(obj).find((k) => k.trim().toLowerCase() === 'source');
  if (key === undefined) return obj;
  throw new Error(`manifest ${path} line ${line} names its source with ${JSON.stringify(key)}: keys are case-sensitive, ` +
    'and its URLs would be crawled under their hosts\' sources instead. Write "source"');
}

function throwColumns(path: string, first: { line: number; text: string; separator: string }): never {
  const shown = JSON.stringify(first.text.slice(0, 120));
  if (first.separator !== ' ') {
    const sep = first.separator;
    throw new Error(`manifest ${path} looks like CSV without its header line (line ${first.line}: ${shown}): read as a list of URLs, ` +
      `each would be crawled with the "${sep}" and what follows it. Add a first line naming the columns (such as url${sep}source), or leave only the URLs`);
  }
  throw new Error(`manifest ${path} has more than a URL on its lines (line ${first.line}: ${shown}): read as a list of URLs, ` +
    'what follows the blank space would be part of each URL. Write CSV with a header line (such as url,source) or NDJSON, or leave only the URLs');
}

/** A line's fields other than url and source (matched as the reader matches them), or undefined when it has none. */
function otherFields(entries: [string, unknown][]): Record<string, unknown> | undefined {
  const kept = entries.filter(([k]) => { const name = k.trim().toLowerCase(); return name !== 'url' && name !== 'source'; });
  return kept.length ? Object.fromEntries(kept) : undefined;
}

/**
 * @param upTo read only the first `bytes` bytes of text (those a manifest's id is of); `onMore`
 * hears when the file has more by now (it is still being written: see firstBytes).
 * @param withFields give each entry its line's other fields (crawl export --manifest).
 */
export async function* readManifest(path: string, upTo?: { bytes: number; lastBreak: number; onMore: () => void }, withFields = false): AsyncGenerator<ManifestEntry> {
  let format: ManifestFormat | undefined;
  let urlCol = -1;
  let headerNames: string[] = [];
  let sourceCol = -1;
  let columns = 0;
  let separator = ',';
  let unreadable = false; // a CSV header without a url column: nothing after it can be read
  let excelSep: string | undefined; // Excel's `sep=;` line before the header
  // A record's cells, as scanned to see whether it goes on in the next line: read once, not twice
  // (a manifest of a million quoted lines took 2.7 s instead of 2.0 to read).
  let scanned: { text: string; cells: string[]; open: boolean } | undefined;
  const scanOf = (text: string): { cells: string[]; open: boolean } => {
    if (scanned?.text !== text) scanned = { text, ...scanCsv(text, separator) };
    return scanned;
  };
  const cellsOf = (text: string): string[] => scanOf(text).cells;
  const opens = (text: string): boolean => text.includes('"') && scanOf(text).open;
  /**
   * A line that reads as a record of its own: every column of the header (the last one open, at
   * most) and a URL in the url column. Two quotes left open by mistake in a caption column,
   * lines apart, joined the lines between into one caption, their URLs lost without a word.
   */
  const recordOfItsOwn = (line: string): boolean => {
    const { cells, open } = scanCsv(line, separator);
    if (open ? cells.length > headerNames.length || urlCol >= cells.length - 1 : cells.length !== headerNames.length) return false;
    return /^https?:\/\/\S+$/i.test(cells[urlCol] ?? '');
  };
  // A record whose quoted cell holds line breaks is read as one, if its URL is where it belongs
  // and none of the lines after its first is a record of its own.
  const records = new CsvRecords(opens, (record) => {
    const cells = cellsOf(record);
    return filled(cells) <= columns && !cells[urlCol]?.includes('\n') && !(sourceCol >= 0 && cells[sourceCol]?.includes('\n')) &&
      !record.split('\n').slice(1).some(recordOfItsOwn);
  }, MAX_LINE_CHARS);

  /** One line's entry (a CSV record's), or undefined for a line that holds none (a header). */
  const entryOf = (line: number, text: string): ManifestEntry | undefined => {
    let rawUrl: unknown;
    let source: unknown;
    let fields: Record<string, unknown> | undefined;
    if (format === 'ndjson') {
      let obj: unknown;
      try {
        obj = JSON.parse(text);
      } catch {
        return { line, error: 'not valid JSON' };
      }
      if (!isPlainObject(obj)) return { line, error: 'expected a JSON object with a "url"' };
      rawUrl = obj.url;
      source = obj.source;
      if (withFields) fields = otherFields(Object.entries(obj));
      // As a CSV cell is, and as the URL's own blank space is dropped by the URL parser.
      if (typeof source === 'string') source = source.trim();
      const misnamed = rawUrl === undefined ? Object.keys(obj).find((k) => k.trim().toLowerCase() === 'url') : undefined;
      if (misnamed !== undefined) return { line, error: `missing "url" (keys are case-sensitive: this line has ${JSON.stringify(misnamed)})` };
    } else if (format === 'csv') {
      if (urlCol < 0) {
        // The separator is the one with which the header names a url column: Excel writes `;` where
        // the decimal mark is a comma, and tab-separated exports are as common.
        if (excelSep === undefined && (excelSep = excelSeparatorLine(text)) !== undefined) return undefined;
        separator = headerSeparator(text) ?? excelSep ?? ',';
        const cells = splitCsv(text, separator);
        urlCol = cells.findIndex((c) => c.toLowerCase() === 'url');
        sourceCol = cells.findIndex((c) => c.toLowerCase() === 'source');
        columns = filled(cells);
        // A column without a name is named by its place, as a spreadsheet shows it.
        headerNames = cells.map((c, i) => c || `column ${i + 1}`);
        if (urlCol < 0) {
          unreadable = true;
          return { line, error: 'CSV header has no "url" column; nothing can be read from this file' };
        }
        return undefined;
      }
      const { cells, open } = scanOf(text);
      // A quote never closed took the rest of the line into one cell, separators and the URL or
      // source with it ("missing url" sent the reader looking for a column that is there). One
      // left open in a later column, or in the header's last column, took no other column in:
      // the line is read as before.
      const last = cells.length - 1;
      if (open && cells[last]!.includes(separator) && last < columns - 1 && last <= Math.max(urlCol, sourceCol)) {
        return { line, error: `a double quote opens column ${last + 1} and is never closed, so the rest of the line was read into it: close or remove it` };
      }
      // More cells than the header has: an unquoted comma split a cell, and the url column may
      // hold half a URL (`museum,https://a.example/a,b.jpg` read https://a.example/a).
      if (filled(cells) > columns) {
        const name = separator === ',' ? 'comma' : separator === ';' ? 'semicolon' : separator === '\t' ? 'tab' : `"${separator}"`;
        return { line, error: `${filled(cells)} columns where the header has ${columns}: a URL with a ${name} in it must be in double quotes` };
      }
      rawUrl = cells[urlCol];
      source = sourceCol >= 0 && cells[sourceCol] ? cells[sourceCol] : undefined;
      if (withFields) fields = otherFields(headerNames.map((name, i) => [name, cells[i] ?? '']));
    } else {
      rawUrl = text;
    }
    // What bytes that are not UTF-8 decode to: read on, the URL would name another image.
    if (text.includes('\ufffd')) return { line, error: NOT_UTF8 };
    if (rawUrl !== undefined && rawUrl !== null && typeof rawUrl !== 'string') {
      return { line, error: `"url" must be a string in quotes (got ${JSON.stringify(rawUrl).slice(0, 60)})` };
    }
    if (typeof rawUrl !== 'string' || rawUrl === '') return { line, error: 'missing "url"' };
    const u = checkUrl(rawUrl);
    if (typeof u === 'string') return { line, error: u };
    if (source !== undefined && source !== null && source !== '') {
      const bad = checkSource(source);
      if (bad) return { line, error: bad };
    }
    const origin = sourceOfUrl(u);
    return { line, url: u.href, source: (source as string | undefined) || origin, origin, ...(fields ? { fields } : {}) };
  };
  const entriesOf = (lines: CsvLine[]): ManifestEntry[] => {
    const out: ManifestEntry[] = [];
    for (const l of lines) {
      if (unreadable) break;
      const entry = entryOf(l.line, l.text);
      if (entry) out.push(entry);
    }
    return out;
  };

  const bytes = upTo ? firstBytes(manifestBytes(path), upTo.bytes, upTo.lastBreak, path, upTo.onMore) : manifestBytes(path);
  for await (const batch of readLines(bytes, MAX_LINE_CHARS)) for (const read of batch) {
    const { line } = read;
    if ('tooLong' in read) {
      yield* entriesOf(records.end());
      if (unreadable) return;
      const array = read.tooLong.head.trimStart().startsWith('[') ? '; a JSON array is not a manifest: write one JSON object per line (NDJSON)' : '';
      yield { line, error: `line is ${read.tooLong.chars} characters long, over the limit of ${MAX_LINE_CHARS}${array}` };
      continue;
    }
    const text = read.text.trim();
    if (records.holding) {
      yield* entriesOf(records.push({ line, text }));
      if (unreadable) return;
      continue;
    }
    if (text === '' || text.startsWith('#')) continue;
    if (text.startsWith('[') && format === undefined) {
      yield { line, error: 'a JSON array is not a manifest: write one JSON object per line (NDJSON)' };
      continue;
    }
    format ??= detectFormat(path, text);
    if (format === 'csv' && urlCol >= 0 && opens(text)) {
      yield* entriesOf(records.push({ line, text }));
      continue;
    }
    const entry = entryOf(line, text);
    if (entry) yield entry;
    if (unreadable) return;
  }
  yield* entriesOf(records.end());
}
