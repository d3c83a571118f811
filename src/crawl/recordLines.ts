/** A metadata record that did not end as `done`, as far as its readers need it. */
export interface NotDoneRecord {
  url?: unknown;
  source: string;
  outcome: string;
  reason?: unknown;
}

/**
 * The records of an export's NDJSON text that did not end as `done`. Most records are done, and
 * those are never parsed; lines that are not records are passed over.
 */
export function* notDoneRecords(text: string): Generator<NotDoneRecord> {
  for (const line of text.split('\n')) {
    if (line === '' || line.includes('"outcome":"done"')) continue;
    let r: { source?: unknown; outcome?: unknown };
    try {
      r = JSON.parse(line) as typeof r;
    } catch {
      continue;
    }
    if (typeof r?.source === 'string' && typeof r.outcome === 'string' && r.outcome !== 'done') yield r as NotDoneRecord;
  }
}
