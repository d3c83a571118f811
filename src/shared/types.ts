import type { RecordFile, RecordUnit } from './recordUnits';

// Types shared by the client (CLI), workflows and activities. Plain data only: everything here
// crosses Temporal payloads, so it stays small and JSON-serialisable.

/** How one URL ended (final) or why it goes back to the queue (retry). */
export type OutcomeClass =
  | 'done'        // fetched, analysed, thumbnail stored, record written
  | 'linkrot'     // 404/410: the image is gone; not held against the site
  | 'robots'      // disallowed by robots.txt; no request was sent for the image
  | 'content'     // response was not a decodable image (or too large, a bomb): the URL's fault
  | 'refused'     // the network guard or URL validation refused it; no request sent
  | 'error';      // site-health error: network, timeout, 5xx, 429, 403

/** One request's result as the monitor sees it. */
export interface RequestOutcome {
  url: string;
  cls: OutcomeClass;
  /** HTTP status when a response arrived. */
  status?: number;
  /** Short reason, e.g. "http 503", "timeout: headers", "robots: disallowed". */
  reason?: string;
  /** Time to first byte in ms, when a response arrived. */
  ttfbMs?: number;
  /**
   * For a body of at least TRANSFER_SAMPLE_MIN_BYTES: the ms its transfer took per MiB (total
   * less time to first byte), what the site's link bears (latency.ts: the download-speed watch).
   */
  msPerMib?: number;
  totalMs?: number;
  /** True when an HTTP request was sent to the source (robots/refused cost none). */
  sent: boolean;
  /** From a 429/503 Retry-After header, already converted to ms from now. */
  retryAfterMs?: number;
  /** True when this outcome is final for the URL; false means "try again later". */
  final: boolean;
  /** Attempts used for this URL so far, including this one; 0 for what an earlier crawl of the chunk recorded. */
  attempt: number;
  /** When the response arrived (epoch ms); a Retry-After counts from here. */
  atMs?: number;
  /**
   * A content outcome that was no image nor anything like one: a page (HTML, JSON or text), an
   * empty body, endless redirects or a 4xx refusal (401, 451, 400...). A run of them is a block,
   * login or cookie wall, or page URLs given (the monitor halts). Named for the first kind it covered.
   */
  page?: true;
  /** A done image's first 8 hex digits of sha256: one file under many URLs is a placeholder (sameImage.ts). */
  sha?: string;
  /**
   * A failure of a URL that had already failed on its own (not by a 429/503, nor a worker's
   * failure): set by the batch in its report. It says nothing new of the site, and the breaker
   * leaves it out (healthSample).
   */
  repeat?: true;
}

/** A grant of request slots: the batch may send `slots` requests inside [startMs, endMs). */
export interface Grant {
  grantId: number;
  batchId: string;
  /** Epoch ms. No request before startMs; none at or after endMs (the grant expires). */
  startMs: number;
  endMs: number;
  /** Spacing of the slots, ms: a little wider than 1000 / rate (the pacing margin). */
  intervalMs: number;
  /** Number of requests granted. */
  slots: number;
  /** Of those, how many may go at startMs without spacing (the configured burst). */
  burstSlots: number;
  /** Epoch ms (workflow time) when the monitor issued the grant; absent from older grants. */
  issuedMs?: number;
  /**
   * How much later the batch and its fetch activity may move the whole window (a first grant
   * that rode in its start input, the last of its window; any last-planned window of a slow
   * source: slowWindowFloatMs): the monitor kept the source's timeline free that long after
   * endMs, so a batch or activity that started late slides the window instead of missing its slots.
   */
  floatMs?: number;
  /**
   * Of the source's latest reported grant, the share of URLs settled without a request (robots.txt
   * ruled them out): a batch's first grant takes more URLs than slots by it (grantItemCount).
   */
  decidedShare?: number;
  /**
   * The longest Retry-After this source's monitor honours, when not the default (15 min): the
   * fetch activity keeps other grants on its worker from the source for no longer than this.
   */
  maxRetryAfterMs?: number;
  /** The source's maxConnections (SourceConfig), when it has one: the fetch activity keeps to it. */
  maxConnections?: number;
  /**
   * Per origin, the open downloads a worker last found the site to bear (OpenLimitHint): a worker
   * that has not judged the site itself keeps to it from its first request.
   */
  openLimits?: Record<string, OpenLimitHint>;
  /**
   * Per origin, a site a worker found to refuse requests beyond a number open (RefusalHint), for
   * as long as it holds: every worker keeps to it, and waits at a grant's start for the requests
   * another worker may still have open there.
   */
  refusals?: Record<string, RefusalHint>;
  /**
   * With `refusals`: how long before startMs the source's timeline held no window (a Retry-After
   * hold, a pause, a stretch without work), at most a minute; absent when the window follows
   * another directly. No request of the source's earlier grants can still be open at its sites
   * once that is longer than their answers take, so the activity need not wait for them.
   */
  quietBeforeMs?: number;
}

/** The pacing schedule handed to the fetch activity along with its URLs. */
export type PacingSchedule = Pick<Grant, 'startMs' | 'endMs' | 'intervalMs' | 'burstSlots' | 'issuedMs' | 'floatMs'>;

export interface TokenRequest {
  batchId: string;
  /** URLs the batch holds that have no slot yet. Absolute, so repeats are harmless. */
  unassigned: number;
  /** Grants the batch had received when it computed `unassigned`. */
  grantsSeen: number;
}

/** A host of a source spanning several whose robots.txt Crawl-delay paced its own URLs within a grant. */
export interface HostCrawlDelay {
  origin: string;
  delayMs: number;
}

/** One host's robots.txt could not be read; the source goes on with its other hosts. */
export interface RobotsHostWait {
  /** The origin, why its robots.txt could not be read, and its try count. */
  error: string;
  /** When the worker reads it again: the same for every report until then, so shown once. */
  retryAtMs: number;
}

/** A grant's requests that waited for a connection to their site (`perSite`: the worker's CRAWL_MAX_CONNECTIONS_PER_SITE). */
export interface ConnectionWaits {
  requests: number;
  perSite: number;
  /**
   * `perSite` is the limit the worker learnt for the site (its downloads slowed as more were
   * open: pipeline/siteDownloads.ts), and `requests` the slots that passed while it held them.
   */
  learnt?: boolean;
  /** As `learnt`, with `perSite` the source's own maxConnections (its catalogue entry). */
  given?: boolean;
  /** With `learnt`: the limit is the worker's start for a site of large images, not yet judged (politeness/openLimit.ts). */
  starting?: boolean;
  /** With `learnt`: the site refused (503, 429) a request sent with more open (pipeline/siteDownloads.ts). */
  refused?: boolean;
}

/**
 * What a worker learnt of how many downloads a site bears at once (politeness/openLimit.ts), as
 * the source's monitor hands it to the workers of its next grants: `limit` null when the worker
 * found the site bears no limit of its own (it lifted one).
 */
export interface OpenLimitHint {
  limit: number | null;
  /** The fastest transfer seen, ms a MiB: what a slowdown is judged against. */
  fastestMsPerMib: number;
}

/**
 * A site that refused (503, 429) a request sent with `limit` others open (pipeline/siteDownloads.ts),
 * as its source's monitor hands it on: held to `limit` open for `forMs` more (a duration, not a
 * time: the worker's and the workflow's clocks differ); `answerMs`: how long its answers take.
 */
export interface RefusalHint {
  limit: number;
  forMs: number;
  answerMs: number;
}

export interface OutcomeReport {
  batchId: string;
  grantId: number;
  outcomes: RequestOutcome[];
  /** Granted slots the activity did not use (stopped early or the grant expired). */
  unused: number;
  /** Of the slots that passed, how many served no URL (see FetchBatchResult.missedSlots). */
  missedSlots?: number;
  /** Some of them passed because the worker's own network looked down (FetchBatchResult.networkDown). */
  networkDown?: boolean;
  /** Requests that waited for a connection to the site, all of the worker's being busy (FetchBatchResult.connectionWaits). */
  connectionWaits?: ConnectionWaits;
  /** What the worker judged of its sites' open downloads (FetchBatchResult.openLimits). */
  openLimits?: Record<string, OpenLimitHint>;
  /** Sites the worker holds for refusing beyond a number open (FetchBatchResult.refusals). */
  refusals?: Record<string, RefusalHint>;
  /** Set when the activity stopped on a 429/503: how long the source asked us to wait. */
  retryAfterMs?: number;
  /** Set when the activity stopped because the site's rate-limit headers said none of its requests is left (FetchBatchResult.quotaHoldMs). */
  quotaHoldMs?: number;
  /** With quotaHoldMs: the site's whole quota for its window, when it said (FetchBatchResult.quotaLimit). */
  quotaLimit?: number;
  /** With quotaHoldMs: the site's own wait when the hold was capped (FetchBatchResult.quotaResetMs). */
  quotaResetMs?: number;
  /** Set when the activity stopped because robots.txt asks for more time between requests (FetchBatchResult.crawlDelayMs). */
  crawlDelayMs?: number;
  /** Set when the activity stopped because robots.txt could not be read (FetchBatchResult.robotsRetryMs). */
  robotsRetryMs?: number;
  /** With robotsRetryMs: which origin's robots.txt, and why it could not be read (FetchBatchResult.robotsError). */
  robotsError?: string;
  /** One host of a source spanning several waits for its robots.txt (FetchBatchResult.robotsHostWait). */
  robotsHostWait?: RobotsHostWait;
  /** One host of a source spanning several goes at its Crawl-delay (FetchBatchResult.hostCrawlDelay). */
  hostCrawlDelay?: HostCrawlDelay;
  /** The shortest Crawl-delay of the hosts the grant sent to (FetchBatchResult.leastHostDelayMs). */
  leastHostDelayMs?: number;
  /** Set when the store failed (FetchBatchResult.storeRetryMs), with what it said. */
  storeRetryMs?: number;
  storeError?: string;
  /** How long the grant took to reach its fetch activity (FetchBatchResult.dispatchMs). */
  dispatchMs?: number;
  /**
   * The grant's window and the latest slot its activity sent in (FetchBatchResult.lastSendMs):
   * the activity has returned, so nothing more goes out in that window.
   */
  windowTail?: { endMs: number; lastSendMs: number };
  /** Of the grant's URLs (`items`), how many were settled without a request (FetchBatchResult.decidedWithoutRequest). */
  decided?: { items: number; decided: number };
  /**
   * The batch's token request, carried along so that a grant's round trip costs one signal
   * (and its history events) instead of two.
   */
  tokens?: Omit<TokenRequest, 'batchId'>;
  /**
   * Set on a batch's last report: it has finished its chunk (as batchFinished says otherwise),
   * so that its end costs no signal and workflow task of its own.
   */
  finished?: { chunkId: string; urls: number };
}

/** A bounded piece of a source's work: inline URLs (small) or a spool file of URLs. */
export interface WorkChunk {
  chunkId: string;
  count: number;
  urls?: string[];
  /** Path or URI of an NDJSON/plain file holding exactly this chunk's URLs. */
  spool?: string;
}

/**
 * Consecutive chunk files of one source from one manifest, as one reference: chunk n has id
 * `${idPrefix}${n}` and its URLs in `chunkSpoolKey(spoolPrefix, n)`; every chunk holds
 * `chunkSize` URLs except chunk `last`, which holds `lastCount`. A source of hundreds of
 * millions of URLs is a handful of these in the monitor's state instead of one entry per chunk.
 */
export interface ChunkRange {
  idPrefix: string;
  spoolPrefix: string;
  first: number;
  last: number;
  chunkSize: number;
  lastCount: number;
}

/** What addWork carries: single chunks (inline URLs, small) or ranges of chunk files. */
export type WorkItem = WorkChunk | ChunkRange;

export interface SourceConfig {
  /** Number of images the source holds, to derive a rate when none is given. */
  imageCount?: number;
  /** Explicit target rate, requests/s. */
  rate?: number;
  /** Extra requests allowed in a 1 s window above ceil(rate). */
  burst?: number;
  /**
   * The most requests a worker may have open to the source's site at once (what its owner asked
   * for, say); the worker's own CRAWL_MAX_CONNECTIONS_PER_SITE, or a lower limit it learnt, when
   * that is fewer.
   */
  maxConnections?: number;
}

/** A Set-Cookie one of a URL's redirects answered, and where from (origin and path), for the chain's next hops (chainCookies.ts). */
export interface ChainCookie {
  from: string;
  setCookie: string;
}

/** Where a URL's redirects have led so far: the next request, and how many hops it took. */
export interface RedirectHop {
  url: string;
  redirects: number;
  /** Cookies the chain's redirects set, sent on its next hops (chainCookies.ts). */
  cookies?: ChainCookie[];
  /** The chain's requests so far (URL and cookies sent, hashed): a redirect back to one of them is a loop. */
  asked?: string[];
}

/** One URL handed to the fetch activity under a grant. */
export interface BatchItem {
  url: string;
  /** Attempt number this try will be (1-based). */
  attempt: number;
  /**
   * An earlier grant ran out of slots part-way through the URL's redirects: the next request goes
   * here, so the site is not asked again for the hops already made.
   */
  hop?: RedirectHop;
  /**
   * An earlier try of the URL failed on its own (FailedUrls): its failing again does not count
   * towards the activity's five errors in a row.
   */
  failedBefore?: true;
}

export interface FetchBatchInput {
  source: string;
  batchId: string;
  /** Names this batch run's record files (`<chunk>/<run>-g<grant>`); without it, the batch id does. */
  unit?: RecordUnit;
  grantId: number;
  items: BatchItem[];
  schedule: PacingSchedule;
  maxAttempts: number;
  /** The longest Retry-After honoured (Grant.maxRetryAfterMs); absent: the default, 15 min. */
  maxRetryAfterMs?: number;
  /** The most requests open at once to a site of the grant (Grant.maxConnections); absent: the worker's own. */
  maxConnections?: number;
  /** Grant.openLimits. */
  openLimits?: Record<string, OpenLimitHint>;
  /** Grant.refusals. */
  refusals?: Record<string, RefusalHint>;
  /** Grant.quietBeforeMs. */
  quietBeforeMs?: number;
  /**
   * The batch's chunk, when these items are all it has left to finish: if every one of them
   * ends final, the activity leaves the chunk's done-marker after the records (and says so in
   * `chunkMarkedDone`), saving the batch a step of its own.
   */
  markDone?: WorkChunk;
}

export interface FetchBatchResult {
  /** One per item that was tried (in any order). */
  outcomes: RequestOutcome[];
  /**
   * Indices into `items` that got no outcome: the activity stopped early or the grant expired
   * (some may have made part of their redirects: see `hops`).
   */
  unused: number[];
  /** Unused items part-way through their redirects, [index into `items`, where to go next]. */
  hops?: [number, RedirectHop][];
  /** Set when the source answered 429/503: how long it asked us to wait, ms. */
  retryAfterMs?: number;
  /**
   * Set when a response's rate-limit headers (RateLimit, X-RateLimit-*) said none of the site's
   * requests is left until its quota resets, this many ms from the activity's end (capped as a
   * Retry-After is): the activity sent nothing more and handed the rest back. Not a refusal: the
   * source's rate stays, and it is held until then.
   */
  quotaHoldMs?: number;
  /** With quotaHoldMs: the site's whole quota for its window, when its headers said. */
  quotaLimit?: number;
  /**
   * With quotaHoldMs, when the cap on a Retry-After made the hold shorter: how long until the
   * site's quota resets by its own word, ms. The monitor's time left reads the site's pace from it.
   */
  quotaResetMs?: number;
  /**
   * Set when the site's robots.txt asks for more time between requests (Crawl-delay, ms) than
   * the grant's slots leave: the activity sent nothing more and handed the rest back.
   */
  crawlDelayMs?: number;
  /**
   * Set when robots.txt of the source's host could not be read (5xx, 429, unreachable) and will
   * be asked for again in this many ms: until then nothing may be fetched there (RFC 9309), so
   * the activity sent nothing more and handed the rest back without using their attempts.
   */
  robotsRetryMs?: number;
  /** With robotsRetryMs: the origin whose robots.txt could not be read, why, and its try count. */
  robotsError?: string;
  /**
   * Set instead of robotsRetryMs when the grant went on with the source's other hosts: one
   * host's robots.txt could not be read (`error` names it) and its URLs wait until `retryAtMs`
   * for the next read. Not a hold; the monitor shows it so an operator can see why those URLs
   * wait.
   */
  robotsHostWait?: RobotsHostWait;
  /**
   * Set when a host of the grant asks for more time between requests than its slots leave, and
   * the grant went on with the source's other hosts (its URLs were spaced by the delay, or went
   * back): the strictest such host. Not a hold; the monitor shows it so an operator can see why
   * those URLs go slower than the source.
   */
  hostCrawlDelay?: HostCrawlDelay;
  /**
   * With hostCrawlDelay: the indices of `unused` whose host's Crawl-delay kept them back (not the
   * grant's end alone). The batch gives them to its next grants first, a few a grant, so they go
   * alongside the other hosts' URLs instead of after all of them.
   */
  hostWaited?: number[];
  /**
   * The shortest Crawl-delay (ms, 0 for none) of the hosts of the URLs the grant sent to; absent
   * when it sent none. A source capped to one host's delay is capped no longer once its batches
   * send to hosts that ask for less (Governor.applyReport).
   */
  leastHostDelayMs?: number;
  /**
   * Set when the store could not take a thumbnail: the activity sent nothing more and handed the
   * rest back, the URL included (its bytes are spooled); nothing is sent to the source for this
   * long. `storeError` says what the store answered.
   */
  storeRetryMs?: number;
  storeError?: string;
  /**
   * The latest slot of the grant that a request went out in (first attempts only; absent when
   * none did): the monitor may open the source's next window one spacing after it instead of at
   * the grant's end (see Governor.reclaimWindowTail).
   */
  lastSendMs?: number;
  /** Every item ended final and the chunk's done-marker is written (see FetchBatchInput.markDone). */
  chunkMarkedDone?: boolean;
  /**
   * From the grant's issue (workflow time) to the start of this activity's first attempt, ms:
   * the monitor leads its windows by about this much (see politeness/grantLead.ts).
   */
  dispatchMs?: number;
  /**
   * Slots that served no URL: late wake-ups moved them past the grant's end, the worker could not
   * get the request out by its send-by time (it is busy), a URL waited for image work, or
   * robots.txt took them.
   */
  missedSlots?: number;
  /**
   * Requests of this grant were not sent because the worker's own network looked down: no site
   * answered, and connections to several found no route (pipeline/workerOutage.ts).
   */
  networkDown?: boolean;
  /**
   * Requests of this grant that had to wait for a connection to their site: each of the worker's
   * was carrying a request. The site's slow answers then set the pace, not the worker.
   */
  connectionWaits?: ConnectionWaits;
  /**
   * What the worker has judged of the sites this grant's requests went to (politeness/openLimit.ts),
   * for its monitor to hand to the next grants' workers.
   */
  openLimits?: Record<string, OpenLimitHint>;
  /** The sites of this grant the worker holds for refusing requests beyond a number open, for its monitor likewise. */
  refusals?: Record<string, RefusalHint>;
  /**
   * Items settled without a request slot (robots.txt ruled them out, say). The batch puts about
   * twice as many URLs as slots into its next grant, so that those slots still go to requests.
   */
  decidedWithoutRequest?: number;
}

/** Final records the workflow itself decides (e.g. attempts used up after activity failures). */
export interface FinalRecordInput {
  source: string;
  /** Names the record file; the same unit written twice replaces it. */
  unit: RecordFile;
  outcomes: RequestOutcome[];
}
