/**
 * How long a source waits after the store has failed before anything is sent to it again: long
 * enough not to download images that cannot be kept, short enough that a brief outage (a
 * restarting MinIO, an S3 throttle) costs a minute, not the crawl.
 */
export const STORE_RETRY_MS = 60_000;

/**
 * The failure type of a fetch activity whose records the store would not take: the batch puts
 * the grant's URLs back without using their attempts, and the monitor holds the source.
 */
export const STORE_UNAVAILABLE = 'StoreUnavailable';

/**
 * The failure type of reading a chunk file the store does not have (or not whole): `crawl start`
 * wrote it to another store than the workers read (another CRAWL_DATA_DIR, --data-dir or bucket).
 * The batch holds its source as for a failing store and reads the chunk again until it is there.
 */
export const CHUNK_UNREADABLE = 'ChunkUnreadable';
