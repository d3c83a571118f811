import { decimal } from '../shared/decimal';
import fs from 'node:fs/promises';
import { TextDecoder } from 'node:util';
import type { SourceConfig } from '../shared/types';
import { SOURCE_CONFIG_FIELDS, sourceConfigOf } from '../politeness/targetRate';
import { isPlainObject } from '../shared/plainObject';
import { excelSeparatorLine, headerSeparator, hostSourceName, splitCsv } from './manifest';
import { utf16Of } from './manifestBytes';

/**
 * The source catalogue: per-source image count, explicit rate, burst and requests open at once.
 * JSON (an array or an object keyed by name) or NDJSON, each entry {name, imageCount?, rate?,
 * burst?, maxConnections?}, or CSV with a header naming those columns.
 */
export type Catalog = Map<string, SourceConfig>;

const FIELDS: readonly string[] = ['name', ...SOURCE_CONFIG_FIELDS];

export async function readCatalog(path: string, warn: (message: string) => void = (m) => { process.stderr.write(`crawl: ${m}\n`); }): Promise<Catalog> {
  let text: string;
  try {
    const st = await fs.stat(path).catch(() => undefined);
    if (!st) throw new CatalogError(`catalog ${path} does not exist`);
    if (st.isDirectory()) throw new CatalogError(`catalog ${path} is a directory, not a file`);
    const bytes = await fs.readFile(path);
    // Written by Windows PowerShell's `>`, it is UTF-16, which read as UTF-8 is not JSON at all.
    const utf16 = utf16Of(bytes);
    text = utf16 ? new TextDecoder(utf16).decode(bytes) : bytes.toString('utf8');
  } catch (err) {
    if (err instanceof CatalogError) throw err;
    throw new Error(`cannot read catalog ${path}: ${(err as Error).message}`);
  }
  let entries: unknown[];
  // Line ends of any kind (a carriage return alone: Excel for Mac), which JSON reads as blank space.
  const trimmed = text.replace(/\r\n?/g, '\n').trim();
  // Every bad entry is named, not only the first: a catalogue of thousands fixed one error a run.
  const problems = new CatalogProblems(path);
  try {
    // Excel's `sep=;` line before the header: the rows' line numbers count it.
    const firstLine = trimmed.slice(0, trimmed.indexOf('\n') >>> 0).trim();
    const excelSep = excelSeparatorLine(firstLine);
    const sheet = excelSep !== undefined ? trimmed.slice(trimmed.indexOf('\n') + 1) : trimmed;
    const csv = csvHeader(sheet) ?? (excelSep !== undefined && !sheet.startsWith('[') && !sheet.startsWith('{') ? excelSep : undefined);
    if (csv) entries = csvEntries(sheet, csv, problems, excelSep !== undefined ? 2 : 1);
    else if (trimmed.startsWith('[')) entries = JSON.parse(trimmed);
    else if (trimmed.startsWith('{') && !trimmed.includes('\n{')) {
      const obj = JSON.parse(trimmed) as Record<string, unknown>;
      entries = keyedEntries(obj, problems);
    } else entries = ndjsonEntries(trimmed, problems);
  } catch (err) {
    throw new Error(`catalog ${path} is not valid JSON or NDJSON: ${(err as Error).message}`);
  }
  const catalog: Catalog = new Map();
  entries.forEach((e, i) => {
    const line = isPlainObject(e) ? entryLines.get(e) : undefined;
    const where = `${line !== undefined ? `line ${line}` : `entry ${i + 1}`}`;
    if (!isPlainObject(e)) return problems.add(`${where}: expected an object`);
    const { name } = e as Record<string, unknown>;
    if (typeof name !== 'string' || name === '') return problems.add(`${where}: "name" is required${nameHint(e as Record<string, unknown>)}`);
    // A misspelt field ("Rate", "rps") would otherwise be ignored, and the source crawled at the
    // default 1/s without a word.
    const unknown = Object.keys(e).filter((k) => !FIELDS.includes(k));
    if (unknown.length) return problems.add(`${where} (${name}): unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k)).join(', ')} (the fields are ${FIELDS.join(', ')})`);
    // Two entries for one source: which should win is anyone's guess, so neither does.
    if (catalog.has(name)) return problems.add(`${where}: "${name}" is listed twice`);
    const taken = sourceConfigOf(e);
    if ('problem' in taken) return problems.add(`${where} (${name}): ${taken.problem}`);
    catalog.set(name, taken.config);
  });
  problems.throwIfAny();
  // Given on purpose, an empty file is most likely an export that failed: say so rather than crawl
  // every source at the default rate without a word. Still crawled: the default is the politest.
  if (catalog.size === 0) warn(`catalog ${path} lists no sources, so it sets no source's rate (a source started without an entry is crawled at 1 request/s)`);
  hostAliases(catalog, path);
  return catalog;
}

/** What an entry without a "name" named its source with, if anything: a key of another case, or of the manifest's word. */
function nameHint(entry: Record<string, unknown>): string {
  const keys = Object.keys(entry);
  const cased = keys.find((k) => k !== 'name' && k.trim().toLowerCase() === 'name');
  if (cased !== undefined) return ` (this entry has ${JSON.stringify(cased)}: keys are case-sensitive)`;
  const other = keys.find((k) => ['source', 'host', 'site', 'domain'].includes(k.trim().toLowerCase()) && typeof entry[k] === 'string');
  return other !== undefined ? ` (this entry has ${JSON.stringify(other)}: a catalogue entry names its source with "name")` : '';
}

const aliases = new WeakMap<Catalog, Map<string, string>>();

/**
 * The source an entry's name means as a host (`Bücher.Example` -> `xn--bcher-kva.example`), for
 * dotted names only: `Museum` and `museum` may be two sources named in their manifests.
 */
export function entryHost(name: string): string {
  return (name.includes('.') ? hostSourceName(name) : undefined) ?? name;
}

/**
 * Entries named by a host as people write it (`Bücher.Example`, `www.Museum.org.`) under the
 * source name its URLs are crawled as (`xn--bcher-kva.example`, `www.museum.org`). Looked up
 * exactly, such an entry matched no source: the site was crawled at the default rate, faster
 * than the catalogue meant for one whose rate was lowered. Two entries for one host are refused
 * in a catalogue file (`path`); in one merged from several runs' (runSettings.ts) the later wins.
 */
function hostAliases(catalog: Catalog, path?: string): Map<string, string> {
  const known = aliases.get(catalog);
  if (known) return known;
  const byHost = new Map<string, string>();
  for (const name of catalog.keys()) {
    const host = entryHost(name);
    if (host === name) continue;
    const other = catalog.has(host) ? host : byHost.get(host);
    if (other !== undefined && path !== undefined) throw new Error(`catalog ${path}: "${name}" and "${other}" name one host (${host}): keep one`);
    byHost.set(host, name);
  }
  aliases.set(catalog, byHost);
  return byHost;
}

/** The entries that apply to these sources, under their own names or their hosts'. */
export function entriesFor(catalog: Catalog, sources: { has(source: string): boolean }): Catalog {
  return new Map([...catalog].filter(([name]) => sources.has(name) || sources.has(entryHost(name))));
}

/** The catalogue entry for a source: the one of its name, else the one naming its host another way (hostAliases). */
export function catalogEntryName(catalog: Catalog, source: string): string | undefined {
  if (catalog.has(source)) return source;
  return hostAliases(catalog).get(source);
}

class CatalogError extends Error {}

/** Catalogue errors shown at most; the rest are counted. */
const SHOWN_PROBLEMS = 20;
const NOT_JSON_HINT = 'a catalogue is a JSON array, or one JSON object a line, of {"name", "imageCount"?, "rate"?, "burst"?, "maxConnections"?}, or CSV with a header naming those columns';

/**
 * A catalogue's bad entries (each is the operator's to fix: a source's rate is not guessed, and
 * nothing is started), all named at once. One reads as it always did, `catalog P line 3 (s): ...`.
 */
class CatalogProblems {
  private readonly found: string[] = [];
  private notJson = false;

  constructor(private readonly path: string) {}

  add(problem: string, opts: { notJson?: boolean } = {}): void {
    this.found.push(problem);
    if (opts.notJson) this.notJson = true;
  }

  throwIfAny(): void {
    if (this.found.length === 0) return;
    const hint = this.notJson ? `: ${NOT_JSON_HINT}` : '';
    const one = this.found[0]!;
    if (this.found.length === 1) throw new CatalogError(`catalog ${this.path}${/^(line|entry) /.test(one) ? ' ' : ': '}${one}${hint}`);
    // In the file's order: lines that are not JSON are found before the entries are checked.
    const lineOf = (p: string) => Number(/^(?:line|entry) (\d+)/.exec(p)?.[1] ?? 0);
    const shown = [...this.found].sort((a, b) => lineOf(a) - lineOf(b)).slice(0, SHOWN_PROBLEMS).map((p) => `\n  ${p}`).join('');
    const more = this.found.length > SHOWN_PROBLEMS ? `\n  and ${this.found.length - SHOWN_PROBLEMS} more` : '';
    throw new CatalogError(`catalog ${this.path} has ${this.found.length} bad entries (fix them all${this.notJson ? `; ${NOT_JSON_HINT}` : ''}):${shown}${more}`);
  }
}

/** The line of each entry of a line-by-line catalogue (NDJSON, CSV): its errors name it, not its index. */
const entryLines = new WeakMap<object, number>();

/**
 * The separator of a CSV catalogue's header, which names a `name` column (as a spreadsheet of
 * sources is kept), or undefined for JSON.
 */
function csvHeader(text: string): string | undefined {
  if (text.startsWith('[') || text.startsWith('{')) return undefined;
  return headerSeparator(text.slice(0, text.indexOf('\n') >>> 0), 'name');
}

/**
 * CSV rows as entries. Column names are read in any case, as a CSV manifest's are (a
 * spreadsheet's `Name,Rate`); an empty cell sets nothing; a number is a number (`2.5`), anything
 * else is checked as given (`rate must be a finite number...`).
 */
function csvEntries(text: string, separator: string, problems: CatalogProblems, headerLine = 1): unknown[] {
  const [head, ...rows] = text.split('\n');
  const columns = splitCsv(head!, separator).map((c) => FIELDS.find((f) => f.toLowerCase() === c.toLowerCase()) ?? c);
  const entries: unknown[] = [];
  rows.forEach((row, i) => {
    if (row.trim() === '') return;
    const cells = splitCsv(row, separator);
    if (cells.slice(columns.length).some((c) => c !== '')) return problems.add(`line ${headerLine + i + 1}: ${cells.length} cells where the header has ${columns.length}`);
    const entry: Record<string, unknown> = {};
    entryLines.set(entry, headerLine + i + 1);
    cells.forEach((cell, c) => {
      if (cell !== '' && c < columns.length) entry[columns[c]!] = columns[c] === 'name' || Number.isNaN(decimal(cell)) ? cell : decimal(cell);
    });
    entries.push(entry);
  });
  return entries;
}

/** One entry a line; a line that is not JSON is named by its number (in a catalogue of thousands). */
function ndjsonEntries(text: string, problems: CatalogProblems): unknown[] {
  const entries: unknown[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    try {
      const entry: unknown = JSON.parse(line);
      if (isPlainObject(entry)) entryLines.set(entry, i + 1);
      entries.push(entry);
    } catch (err) {
      problems.add(`line ${i + 1} is not valid JSON (${(err as Error).message})`, { notJson: true });
    }
  });
  return entries;
}

/**
 * An object keyed by source name, or the one entry of a one-line NDJSON catalogue, which looks
 * the same until its values are read: `{"name": "a", "rate": 2}` was taken as sources "name" and
 * "rate" and failed on fields "0", "1"..., and `{"a": 2}` as source "a" with nothing set.
 */
function keyedEntries(obj: Record<string, unknown>, problems: CatalogProblems): unknown[] {
  const values = Object.values(obj);
  if (typeof obj.name === 'string' && !values.every(isPlainObject)) return [obj];
  return Object.entries(obj).flatMap(([name, v]) => {
    if (isPlainObject(v)) return [{ name, ...v }];
    problems.add(`source ${JSON.stringify(name)} must be an object such as {"rate": 2} (got ${JSON.stringify(v)}); or write entries as [{"name": ..., "rate": ...}]`);
    return [];
  });
}
