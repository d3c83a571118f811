import { isPlainObject } from '../shared/plainObject';

/**
 * Metadata records as CSV, for a spreadsheet or a database's CSV import (`COPY ... CSV HEADER`):
 * one row per record under a fixed header, the documented fields in the order the records hold
 * them. A field no column names (one added later, or a store written by another version) goes
 * into the last column, `other`, as JSON, so that nothing a record holds is lost.
 */

export const RECORD_COLUMNS = [
  'url', 'source', 'outcome', 'reason', 'status', 'ttfbMs', 'totalMs', 'attempts', 'recordedAt',
  'format', 'width', 'height', 'bytes', 'sha256', 'jpegQuality', 'orientation',
  'artist', 'copyright', 'licenseUrl', 'xRobotsTag', 'tdmReservation', 'tdmPolicy', 'lastModified',
  'dHash', 'thumbnailKey', 'originalKey', 'finalUrl', 'redirects',
] as const;

const NAMED = new Set<string>(RECORD_COLUMNS);

/** RFC 4180's line break: what Excel writes, and what every CSV reader takes. */
const EOL = '\r\n';

/**
 * A spreadsheet runs a cell that starts with one of these as a formula (CSV injection), and
 * EXIF, XMP and IPTC text is whatever the site put there: `=HYPERLINK(...)` as an artist.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

const NEEDS_QUOTES = /[",\r\n]/;

export class RecordsCsv {
  /** Rows written so far. */
  written = 0;
  /** Lines of the record text that were not a JSON object, left out of the rows. */
  notRecords = 0;

  /** @param manifestFields the joined manifest's field names (ManifestJoin): `manifest.line` and a column each. */
  constructor(private readonly manifestFields?: readonly string[]) {}

  header(): string {
    const joined = this.manifestFields ? ['manifest.line', ...this.manifestFields.map((f) => `manifest.${f}`)] : [];
    return [...RECORD_COLUMNS, ...joined.map(textCell), 'other'].join(',') + EOL;
  }

  /** NDJSON record text (whole lines) as CSV rows. */
  rows(text: string): string {
    const records: Record<string, unknown>[] = [];
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      const record = recordOfLine(line);
      if (record) records.push(record);
      else this.notRecords += 1;
    }
    return this.rowsOf(records);
  }

  /** Parsed records as CSV rows. */
  rowsOf(records: readonly Record<string, unknown>[]): string {
    let out = '';
    for (const record of records) {
      out += this.rowOf(record) + EOL;
      this.written += 1;
    }
    return out;
  }

  private rowOf(record: Record<string, unknown>): string {
    let row = '';
    for (const c of RECORD_COLUMNS) row += `${cellOf(record[c])},`;
    if (this.manifestFields) {
      const joined = (record.manifest ?? {}) as Record<string, unknown>;
      row += `${cellOf(joined.line)},`;
      for (const f of this.manifestFields) row += `${cellOf(joined[f])},`;
    }
    let others: Record<string, unknown> | undefined;
    for (const k in record) {
      if (!NAMED.has(k) && !(this.manifestFields && k === 'manifest')) (others ??= {})[k] = record[k];
    }
    return others ? row + quoted(JSON.stringify(others)) : row;
  }
}

/** A record file's line as its object, or undefined for a line that is no JSON object (damaged by hand). */
export function recordOfLine(line: string): Record<string, unknown> | undefined {
  try {
    const record: unknown = JSON.parse(line);
    return isPlainObject(record) ? record : undefined;
  } catch {
    return undefined;
  }
}

function cellOf(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return textCell(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  // X-Robots-Tag directives, written as the header writes them.
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return textCell(value.join(', '));
  return quoted(JSON.stringify(value));
}

function textCell(text: string): string {
  // The apostrophe is how a spreadsheet itself marks a cell as text; it shows nothing else.
  return quoted(FORMULA_START.test(text) ? `'${text}` : text);
}

function quoted(text: string): string {
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
