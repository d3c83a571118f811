import fs from 'node:fs';

/**
 * The process's limit on open files (sockets included), as Linux reports it; undefined when it
 * is unlimited or cannot be read. Node raises its soft limit to the hard one as it starts, so
 * this is what the worker has.
 */
export function openFilesLimit(readLimits: () => string = () => fs.readFileSync('/proc/self/limits', 'utf8')): number | undefined {
  let text: string;
  try {
    text = readLimits();
  } catch {
    return undefined;
  }
  const m = /^Max open files\s+(\S+)/m.exec(text);
  const n = m ? Number(m[1]) : NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/** Descriptors a worker needs besides its sites' connections: the server's connections, the runtime's threads and event loops, store files. */
export const FILES_RESERVED = 128;
/** A worker below this many cannot run at all (the workflow sandbox's event loops failed at 90: the process aborted). */
export const FILES_MIN = 256;

/**
 * How many fetch activities (one per source crawled at once) fit in `limit` open files: each
 * holds a connection per host of its source, more at high rates, so two each are counted. Past
 * the limit a connection fails with EMFILE, and the workflow sandbox can abort the process.
 */
export function activitiesWithinFiles(wanted: number, limit: number | undefined): { activities: number; note?: string } {
  if (limit === undefined || limit >= FILES_RESERVED + 2 * wanted) return { activities: wanted };
  if (limit < FILES_MIN) {
    throw new Error(`the open-files limit is ${limit} (ulimit -n): a worker needs at least ${FILES_MIN}, and ${FILES_RESERVED + 2 * wanted} for CRAWL_MAX_ACTIVITIES ${wanted}; raise it (ulimit -n, systemd LimitNOFILE, docker --ulimit nofile)`);
  }
  const activities = Math.floor((limit - FILES_RESERVED) / 2);
  return {
    activities,
    note: `the open-files limit is ${limit} (ulimit -n): this worker crawls at most ${activities} sources at once instead of CRAWL_MAX_ACTIVITIES ${wanted}, so that each has room for its connections; raise the limit to ${FILES_RESERVED + 2 * wanted} (ulimit -n, systemd LimitNOFILE, docker --ulimit nofile) for all of them`,
  };
}
