/**
 * Every environment variable of ours (CRAWL_*) that the crawler, its tools and its benches read.
 * A misspelt one (`CRAWL_ALLOW_NETWORK`, `CRAWL_MAXRATE`) was ignored without a word, and the
 * crawl ran on the default it meant to change: a refused intranet, a rate left at its catalogue.
 * `settingNames.test.ts` keeps this list to the names the code reads.
 */
export const CRAWL_SETTINGS: readonly string[] = [
  'CRAWL_ALLOW_NETWORKS', 'CRAWL_ALLOW_SDK_DOWNLOAD', 'CRAWL_BENCH_MEMLOG', 'CRAWL_CONNECT_TIMEOUT_MS', 'CRAWL_DATA_DIR',
  'CRAWL_EXCLUDE_HOSTS', 'CRAWL_FROM', 'CRAWL_HEADERS_TIMEOUT_MS', 'CRAWL_HEALTH_ADDRESS', 'CRAWL_HEAP_GROWING_PERCENT',
  'CRAWL_HELPER_NICE', 'CRAWL_IMAGE_CONCURRENCY', 'CRAWL_KEEP_ORIGINALS', 'CRAWL_LOCAL_STORE_DIR', 'CRAWL_LOG_LEVEL',
  'CRAWL_MAX_ACTIVITIES', 'CRAWL_MAX_BACKLOG', 'CRAWL_MAX_BACKLOG_BYTES', 'CRAWL_MAX_BODY_BYTES', 'CRAWL_MAX_CONNECTIONS_PER_SITE',
  'CRAWL_MAX_DECODE_PIXELS', 'CRAWL_MAX_PIXELS', 'CRAWL_MAX_RATE', 'CRAWL_MAX_RETRY_AFTER_S', 'CRAWL_METRICS_ADDRESS',
  'CRAWL_MIN_BYTES_PER_SECOND', 'CRAWL_MIN_RATE_GRACE_MS', 'CRAWL_PERCEPTUAL_HASH', 'CRAWL_PROXY', 'CRAWL_READ_TDMREP',
  'CRAWL_ROBOTS_RETRY_S', 'CRAWL_ROBOTS_TRIES', 'CRAWL_S3_BUCKET', 'CRAWL_S3_ENDPOINT', 'CRAWL_S3_FORCE_PATH_STYLE',
  'CRAWL_S3_PREFIX', 'CRAWL_S3_REGION', 'CRAWL_SERVER_NICE', 'CRAWL_STORE', 'CRAWL_TASK_QUEUE', 'CRAWL_THUMBNAIL_FORMAT',
  'CRAWL_THUMBNAIL_MAX_SIDE', 'CRAWL_THUMBNAIL_QUALITY', 'CRAWL_TOOLS_DIR', 'CRAWL_TOTAL_TIMEOUT_MS', 'CRAWL_USER_AGENT',
];

const KNOWN = new Set(CRAWL_SETTINGS);

/** Edits (insert, delete, replace) from `a` to `b`. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}

/** The setting a misspelt name most likely meant: at most 2 edits away, underscores aside. */
function meant(name: string): string | undefined {
  const bare = (s: string) => s.replace(/_/g, '');
  let best: { name: string; edits: number } | undefined;
  for (const known of CRAWL_SETTINGS) {
    const edits = Math.min(editDistance(name, known), editDistance(bare(name), bare(known)));
    if (edits <= 2 && (!best || edits < best.edits)) best = { name: known, edits };
  }
  return best?.name;
}

/** The CRAWL_* variables set in `env` that the crawler does not read, each with the one it may have meant. */
export function unknownSettings(env: NodeJS.ProcessEnv): { name: string; meant?: string }[] {
  return Object.keys(env).filter((name) => name.startsWith('CRAWL_') && !KNOWN.has(name)).sort()
    .map((name) => {
      const guess = meant(name);
      return guess ? { name, meant: guess } : { name };
    });
}

/** The warning for one unknown setting. */
export function unknownSettingText(u: { name: string; meant?: string }): string {
  return `${u.name} is set, but the crawler has no such setting${u.meant ? ` (did you mean ${u.meant}?)` : ''}: it is ignored (the settings are in docs/operations.md)`;
}
