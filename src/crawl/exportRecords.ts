import fs from 'node:fs';
import { sourceSegment } from '../pipeline/keys';
import type { ObjectStore } from '../pipeline/store';

/**
 * Metadata records live in the store as one NDJSON object per unit of work under
 * `records/<source>/` (`<chunk>/<batch run>-g<grant>.ndjson`), local directory or S3 alike. This
 * joins them into one NDJSON stream: every source's, or the named ones', in key order.
 */

export interface ExportSummary {
  records: number;
  /** Record files read. */
  units: number;
  /** Named sources that have no record file (yet). */
  sourcesWithoutRecords: string[];
}

/** Record files fetched at once: on S3 each is a round trip. Written in key order all the same. */
const PREFETCH = 16;

/** `inspect` sees each record file's text as it is written (see FailureTally). */
export async function exportRecords(store: ObjectStore, write: (text: string) => Promise<void> | void, sources: readonly string[] = [], inspect?: (text: string) => void): Promise<ExportSummary> {
  const named = [...new Set(sources)];
  const prefixes = named.length ? named.map((s) => `records/${sourceSegment(s)}/`) : ['records/'];
  const summary: ExportSummary = { records: 0, units: 0, sourcesWithoutRecords: [] };
  for (const [i, prefix] of prefixes.entries()) {
    const keys: string[] = [];
    for await (const key of store.list(prefix)) if (key.endsWith('.ndjson')) keys.push(key);
    if (named.length && keys.length === 0) summary.sourcesWithoutRecords.push(named[i]!);
    keys.sort();
    for (let k = 0; k < keys.length; k += PREFETCH) {
      const bodies = await Promise.all(keys.slice(k, k + PREFETCH).map((key) => store.get(key)));
      for (const body of bodies) {
        if (!body) continue; // removed since it was listed
        const text = body.toString('utf8');
        if (text === '') continue; // a retried unit that found nothing left to record
        summary.units += 1;
        summary.records += countLines(text);
        inspect?.(text);
        await write(text.endsWith('\n') ? text : `${text}\n`);
      }
    }
  }
  return summary;
}

/** exportRecords into a file, replaced whole once complete (a reader never sees half of it). */
export async function exportRecordsToFile(store: ObjectStore, file: string, sources: readonly string[] = [], inspect?: (text: string) => void): Promise<ExportSummary> {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  let summary: ExportSummary;
  try {
    summary = await exportRecords(store, (text) => { fs.writeSync(fd, text); }, sources, inspect);
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  fs.renameSync(tmp, file);
  return summary;
}

function countLines(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return text.endsWith('\n') ? n : n + 1;
}
