/**
 * Fetch-activity heartbeats. Details carry every URL the attempt finished, so each heartbeat
 * costs in proportion to the grant, and the server writes each one down.
 *
 * The SDK throttles heartbeats to 80% of the timeout: with a 10 s timeout that left 2 s for a
 * heartbeat to reach a loaded server, and with 200 sources on one machine attempts timed out,
 * each one a second download of what it had fetched since its last heartbeat (measured: 36-57
 * URLs per run of the e2e bench). Beating every 3 s instead made the crawl itself slower (200
 * activities, 67 heartbeats/s). So: the same 8 s rhythm as before, with the throttle pinned to it
 * (createCrawlWorker) and 22 s of slack; a dead worker's attempts are retried after 30 s.
 * Shared by the activity, the worker and the batch workflow, so free of Node APIs.
 */
export const HEARTBEAT_EVERY_MS = 8_000;
export const HEARTBEAT_TIMEOUT_MS = 30_000;

/** How long a stopping monitor waits for its cancelled batches' activities: a heartbeat timeout and then some. */
export const STOPPED_BATCHES_WAIT_MS = HEARTBEAT_TIMEOUT_MS * 2;
