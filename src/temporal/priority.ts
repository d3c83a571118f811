import fs from 'node:fs';
import os from 'node:os';
import { intFromEnv } from '../shared/env';

/**
 * Lowers the CPU priority (raises the nice value) of a process and, on Linux, of each of its
 * threads: setpriority() on a pid there only reaches the thread with that id, and threads
 * made later inherit from the thread that makes them. Returns how many were changed.
 *
 * Why: the embedded Temporal server shares the machine with the crawler. When the CPU is
 * saturated, a request slot the crawler wakes up late for is given up (sending late would
 * crowd the next request at the site); the server's work can wait a few milliseconds without
 * harm (grants are issued a second ahead).
 */
export function lowerPriority(pid: number, nice: number, except?: number): number {
  if (nice <= 0) return 0;
  const taskDir = `/proc/${pid}/task`;
  const ids = fs.existsSync(taskDir) ? fs.readdirSync(taskDir).map(Number) : [pid];
  let changed = 0;
  for (const id of ids) {
    if (id === except) continue;
    try {
      if (os.getPriority(id) < nice) os.setPriority(id, nice);
      changed += 1;
    } catch {
      // The thread ended meanwhile, or the OS does not allow it: priority is best effort.
    }
  }
  return changed;
}

/** CRAWL_SERVER_NICE: the embedded server's nice value (default 10; 0 leaves it alone). */
export function serverNiceFromEnv(): number {
  return niceFromEnv('CRAWL_SERVER_NICE', 10);
}

function niceFromEnv(name: string, fallback: number): number {
  return intFromEnv(name, fallback, 0, 19);
}

let keeper: NodeJS.Timeout | undefined;

/**
 * Keeps every thread of this process but the main one at nice `nice`, checking every few
 * seconds for threads made since (libuv's pool, libvips, the Temporal SDK's threads and its
 * workflow thread are made on first need, some by the main thread, whose priority they would
 * inherit). Linux only; a no-op elsewhere or with nice 0.
 *
 * Why: the main thread sends the paced requests. When it waits for a core behind image work,
 * a request misses its send-by time and is not sent, and its slot is lost (measured with 200
 * sources at 1 req/s: 17-42 requests refused at the socket per run instead of 81-100).
 */
export function keepHelperThreadsBelowMain(nice: number, everyMs = 2_000): void {
  if (nice <= 0 || keeper || process.platform !== 'linux') return;
  const apply = () => lowerPriority(process.pid, nice, process.pid);
  apply();
  keeper = setInterval(apply, everyMs);
  keeper.unref();
}

/** CRAWL_HELPER_NICE: nice value of the worker's threads other than the main one (default 5; 0 = off). */
export function helperNiceFromEnv(): number {
  return niceFromEnv('CRAWL_HELPER_NICE', 5);
}
