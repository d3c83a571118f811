import type { MetricMeter } from '@temporalio/common';
import type { OutcomeClass } from '../shared/types';

/**
 * The crawl's own Prometheus metrics, served with the SDK's by a worker that has
 * CRAWL_METRICS_ADDRESS set (see temporal/runtime.ts). Labels are few and fixed: a per-source
 * label would make one series per website, and the monitors show sources already.
 */
export interface CrawlMetrics {
  /** A request sent to a site, with the status it got (a site file's status is not known here). */
  request(kind: 'image' | 'robots.txt' | 'tdmrep.json', status: number | undefined, ttfbMs: number | undefined): void;
  /** A URL whose outcome is final; `bytes` for a downloaded image. */
  finished(cls: OutcomeClass, bytes: number | undefined): void;
  /** A request sent again at once after the site closed its connection unanswered (fetcher.ts). */
  resent(): void;
  /** An image request that waited for a connection to its site, all of the worker's to it carrying requests. */
  waitedForConnection(): void;
}

export function crawlMetrics(meter: MetricMeter): CrawlMetrics {
  const requests = meter.createCounter('crawl_requests', 'requests', 'Requests sent to sites: kind image by status class (none: no response), kinds robots.txt and tdmrep.json');
  const ttfb = meter.createHistogram('crawl_time_to_first_byte', 'float', 's', 'Time to the first byte of image responses');
  const finished = meter.createCounter('crawl_urls_finished', 'urls', 'URLs whose outcome is final, by outcome (done, linkrot, content, robots, refused, error)');
  const downloaded = meter.createCounter('crawl_downloaded_bytes', 'bytes', 'Bytes of the images downloaded and stored');
  const resent = meter.createCounter('crawl_requests_resent', 'requests',
    'Requests sent again at once on a new connection: the site had closed the one they went out on, unanswered (a keep-alive connection it timed out as the request arrived)');
  const waited = meter.createCounter('crawl_requests_waited_for_connection', 'requests',
    'Image requests that waited for a connection to their site: every one of the worker\'s to it (CRAWL_MAX_CONNECTIONS_PER_SITE) was carrying a request, the site answering too slowly for its rate');
  return {
    request(kind, status, ttfbMs) {
      if (kind !== 'image') return requests.add(1, { kind });
      requests.add(1, { kind, status: status === undefined ? 'none' : `${Math.floor(status / 100)}xx` });
      if (ttfbMs !== undefined) ttfb.record(ttfbMs / 1000);
    },
    finished(cls, bytes) {
      finished.add(1, { outcome: cls });
      if (bytes) downloaded.add(bytes);
    },
    resent() {
      resent.add(1);
    },
    waitedForConnection() {
      waited.add(1);
    },
  };
}
