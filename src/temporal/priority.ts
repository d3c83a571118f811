import fs from 'node:fs';
import os from 'node:os';

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
export function lowerPriority(pid: number, nice: number): number {
  if (nice <= 0) return 0;
  const taskDir = `/proc/${pid}/task`;
  const ids = fs.existsSync(taskDir) ? fs.readdirSync(taskDir).map(Number) : [pid];
  let changed = 0;
  for (const id of ids) {
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
  const raw = process.env.CRAWL_SERVER_NICE;
  if (raw === undefined || raw === '') return 10;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 19) throw new Error(`CRAWL_SERVER_NICE must be an integer from 0 to 19, got ${JSON.stringify(raw)}`);
  return n;
}
