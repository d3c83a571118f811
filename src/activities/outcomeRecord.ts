import type { OutcomeClass, RequestOutcome } from '../shared/types';

/** A URL's metadata record: the fields its outcome gives, then the pipeline's own (analysis, thumbnail key). */
export function recordOf(source: string, o: RequestOutcome): Record<string, unknown> {
  return {
    url: o.url, source, outcome: o.cls, reason: o.reason ?? null, status: o.status ?? null,
    ttfbMs: o.ttfbMs ?? null, totalMs: o.totalMs ?? null, attempts: o.attempt, recordedAt: new Date().toISOString(),
  };
}

const OUTCOME_FIELDS = new Set(['url', 'source', 'outcome', 'reason', 'status', 'ttfbMs', 'totalMs', 'attempts']);
/** Every outcome a record may have. */
export const RECORD_OUTCOMES: readonly OutcomeClass[] = ['done', 'linkrot', 'robots', 'content', 'refused', 'error'];
const CLASSES = new Set<string>(RECORD_OUTCOMES);

/**
 * A final outcome and the record's own fields back from a record recordOf() began, for a grant
 * whose earlier attempt stored its records but whose result the server never got (the server
 * was down when it finished): the retry reports them instead of asking the site again.
 * `recordedAt` stays with the record's fields, so the record written again is the same.
 * Marked unsent, as a record kept through a store outage is: this attempt asked the site
 * nothing, and what the site said then (a page, its Retry-After) is not in the record.
 * Undefined for a line that is not such a record.
 */
export function finishedFromRecord(r: unknown): { outcome: RequestOutcome; extra: Record<string, unknown> } | undefined {
  if (typeof r !== 'object' || r === null) return undefined;
  const rec = r as Record<string, unknown>;
  const { url, outcome: cls, reason, status, ttfbMs, totalMs, attempts } = rec;
  if (typeof url !== 'string' || typeof cls !== 'string' || !CLASSES.has(cls) || typeof attempts !== 'number') return undefined;
  const extra = Object.fromEntries(Object.entries(rec).filter(([k]) => !OUTCOME_FIELDS.has(k)));
  const sha = typeof extra.sha256 === 'string' ? extra.sha256.slice(0, 8) : undefined;
  return {
    outcome: {
      url, cls: cls as OutcomeClass, sent: false, final: true, attempt: attempts,
      ...(typeof reason === 'string' ? { reason } : {}),
      ...(typeof status === 'number' ? { status } : {}),
      ...(typeof ttfbMs === 'number' ? { ttfbMs } : {}),
      ...(typeof totalMs === 'number' ? { totalMs } : {}),
      ...(sha !== undefined ? { sha } : {}),
    },
    extra,
  };
}
