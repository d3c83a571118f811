import fs from 'node:fs';
import os from 'node:os';

type ReadFile = (path: string) => string;

const readText: ReadFile = (p) => fs.readFileSync(p, 'utf8');

/**
 * The CPUs this process may keep busy: the machine's, or fewer under a cgroup CPU limit (a
 * container's `--cpus`, a Kubernetes limit). Node 20's availableParallelism() counts the
 * machine's cores only (its libuv, 1.46, reads no quota), so a worker limited to 2 CPUs on a
 * 64-core node would size its image work for 64: 128 images decoding at once, throttled to 2 CPUs,
 * each holding its memory for 64 times as long.
 */
export function usableCpus(read: ReadFile = readText, cores = os.availableParallelism()): number {
  const quota = cgroupV2Quota(read) ?? cgroupV1Quota(read);
  return quota === undefined ? cores : Math.max(1, Math.min(cores, Math.ceil(quota)));
}

/** cgroup v2: `/sys/fs/cgroup/cpu.max` holds "QUOTA PERIOD", or "max PERIOD" without a limit. */
function cgroupV2Quota(read: ReadFile): number | undefined {
  const text = tryRead(read, '/sys/fs/cgroup/cpu.max');
  const m = text && /^(\d+)\s+(\d+)/.exec(text.trim());
  return m ? ratio(Number(m[1]), Number(m[2])) : undefined;
}

/** cgroup v1: cpu.cfs_quota_us (-1 without a limit) over cpu.cfs_period_us. */
function cgroupV1Quota(read: ReadFile): number | undefined {
  for (const dir of ['/sys/fs/cgroup/cpu', '/sys/fs/cgroup/cpu,cpuacct']) {
    const quota = Number(tryRead(read, `${dir}/cpu.cfs_quota_us`)?.trim());
    const period = Number(tryRead(read, `${dir}/cpu.cfs_period_us`)?.trim());
    if (quota > 0) return ratio(quota, period);
  }
  return undefined;
}

function ratio(quota: number, period: number): number | undefined {
  return quota > 0 && period > 0 ? quota / period : undefined;
}

function tryRead(read: ReadFile, path: string): string | undefined {
  try {
    return read(path);
  } catch {
    return undefined;
  }
}
