import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

// Defined once and shared by workflows, the worker and the dev-server launcher, so that the
// names an operator filters on in the Web UI cannot drift apart.
export const CRAWL_SOURCE = defineSearchAttributeKey('CrawlSource', SearchAttributeType.KEYWORD);
export const CRAWL_STATE = defineSearchAttributeKey('CrawlState', SearchAttributeType.KEYWORD);
export const CRAWL_RATE = defineSearchAttributeKey('CrawlRate', SearchAttributeType.DOUBLE);
export const CRAWL_DONE = defineSearchAttributeKey('CrawlDone', SearchAttributeType.INT);
export const CRAWL_ERRORS = defineSearchAttributeKey('CrawlErrors', SearchAttributeType.INT);

export const ALL_SEARCH_ATTRIBUTES = [CRAWL_SOURCE, CRAWL_STATE, CRAWL_RATE, CRAWL_DONE, CRAWL_ERRORS];
