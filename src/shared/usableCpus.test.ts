import { usableCpus } from './usableCpus';

const files = (entries: Record<string, string>) => (path: string) => {
  if (path in entries) return entries[path]!;
  throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
};

describe('usableCpus', () => {
  it('is a cgroup v2 CPU limit, rounded up, when it is below the machine\'s cores', () => {
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '200000 100000\n' }), 64)).toBe(2);
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '150000 100000\n' }), 64)).toBe(2);
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '50000 100000\n' }), 64)).toBe(1);
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '800000 100000\n' }), 4)).toBe(4);
  });

  it('is a cgroup v1 CFS quota over its period', () => {
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '300000\n', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n' }), 64)).toBe(3);
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us': '100000', '/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us': '100000' }), 64)).toBe(1);
  });

  it('is the machine\'s cores without a limit, or where the files cannot be read (not Linux)', () => {
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' }), 16)).toBe(16);
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1\n', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n' }), 16)).toBe(16);
    expect(usableCpus(files({}), 16)).toBe(16);
  });
});
