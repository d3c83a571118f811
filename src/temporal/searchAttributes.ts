import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair, type TypedSearchAttributes } from '@temporalio/common';

// Defined once and shared by workflows, the worker and the dev-server launcher, so that the
// names an operator filters on in the Web UI cannot drift apart.
export const CRAWL_SOURCE = defineSearchAttributeKey('CrawlSource', SearchAttributeType.KEYWORD);
export const CRAWL_STATE = defineSearchAttributeKey('CrawlState', SearchAttributeType.KEYWORD);
export const CRAWL_RATE = defineSearchAttributeKey('CrawlRate', SearchAttributeType.DOUBLE);
export const CRAWL_DONE = defineSearchAttributeKey('CrawlDone', SearchAttributeType.INT);
export const CRAWL_ERRORS = defineSearchAttributeKey('CrawlErrors', SearchAttributeType.INT);

export const ALL_SEARCH_ATTRIBUTES = [CRAWL_SOURCE, CRAWL_STATE, CRAWL_RATE, CRAWL_DONE, CRAWL_ERRORS];

/** The CrawlState of a monitor that completed because everything it was given has ended. */
export const FINISHED = 'finished';

/** What a monitor shows in its search attributes (see the monitor's publish). */
export interface MonitorShown {
  source: string;
  state: string;
  rate: number;
  done: number;
  errors: number;
}

export function monitorSearchAttributes(s: MonitorShown): SearchAttributePair[] {
  return [
    { key: CRAWL_SOURCE, value: s.source },
    { key: CRAWL_STATE, value: s.state },
    { key: CRAWL_RATE, value: Math.round(s.rate * 100) / 100 },
    { key: CRAWL_DONE, value: s.done },
    { key: CRAWL_ERRORS, value: s.errors },
  ];
}

/**
 * What the monitor compares to decide whether its search attributes changed (its source never
 * does). The format is the one monitors have always used: their upserts must replay the same.
 */
export function shownKey(s: MonitorShown): string {
  return `${s.state}|${s.rate.toFixed(2)}|${s.done}|${s.errors}`;
}

/** What a workflow's search attributes show, when they are a monitor's (all five set). */
export function shownBy(attrs: TypedSearchAttributes): MonitorShown | undefined {
  const source = attrs.get(CRAWL_SOURCE);
  const state = attrs.get(CRAWL_STATE);
  const rate = attrs.get(CRAWL_RATE);
  const done = attrs.get(CRAWL_DONE);
  const errors = attrs.get(CRAWL_ERRORS);
  if (source === undefined || state === undefined || rate === undefined || done === undefined || errors === undefined) return undefined;
  return { source, state, rate, done, errors };
}
