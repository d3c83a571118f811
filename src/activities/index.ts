// Every activity the worker registers. The crawl activities are built from their
// dependencies (processor, recorder) by the worker; see src/workers/worker.ts.
export * from './smoke';
export type { CrawlActivities } from './crawlActivities';
