import { activitiesWithinFiles, openFilesLimit } from './openFiles';

const limits = (soft: string, hard = soft) => () => [
  'Limit                     Soft Limit           Hard Limit           Units     ',
  'Max cpu time              unlimited            unlimited            seconds   ',
  `Max open files            ${soft.padEnd(21)}${hard.padEnd(21)}files     `,
  'Max locked memory         8388608              8388608              bytes     ',
].join('\n');

describe('open files', () => {
  it('reads the soft limit from /proc/self/limits, and nothing when unlimited or unreadable', () => {
    expect(openFilesLimit(limits('1024', '524288'))).toBe(1024);
    expect(openFilesLimit(limits('unlimited'))).toBeUndefined();
    expect(openFilesLimit(() => { throw new Error('ENOENT'); })).toBeUndefined();
    expect(openFilesLimit()).toBeGreaterThan(0); // this machine's
  });

  it('fits the sources crawled at once into the limit, two descriptors each beside a reserve, and says so', () => {
    expect(activitiesWithinFiles(1000, undefined)).toEqual({ activities: 1000 });
    expect(activitiesWithinFiles(1000, 1_048_576)).toEqual({ activities: 1000 });
    expect(activitiesWithinFiles(1000, 2128)).toEqual({ activities: 1000 });
    const fitted = activitiesWithinFiles(1000, 1024);
    expect(fitted.activities).toBe(448);
    expect(fitted.note).toBe('the open-files limit is 1024 (ulimit -n): this worker crawls at most 448 sources at once instead of CRAWL_MAX_ACTIVITIES 1000, so that each has room for its connections; raise the limit to 2128 (ulimit -n, systemd LimitNOFILE, docker --ulimit nofile) for all of them');
  });

  it('refuses a limit too small for a worker at all', () => {
    expect(() => activitiesWithinFiles(1000, 90)).toThrow('the open-files limit is 90 (ulimit -n): a worker needs at least 256, and 2128 for CRAWL_MAX_ACTIVITIES 1000; raise it');
    expect(activitiesWithinFiles(10, 200)).toEqual({ activities: 10 });
  });
});
