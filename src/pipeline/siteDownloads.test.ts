import type { OpenLimitChange } from '../politeness/openLimit';
import { SiteDownloads } from './siteDownloads';

const SITE = 'http://img.example';

function downloads(maxPerSite = 64): { d: SiteDownloads; changes: OpenLimitChange[]; clock: { ms: number } } {
  const changes: OpenLimitChange[] = [];
  const clock = { ms: 0 };
  return { d: new SiteDownloads(maxPerSite, {}, (_origin, c) => changes.push(c), () => clock.ms), changes, clock };
}

describe('a worker\'s downloads per site', () => {
  it('holds a site to 8 from its first large answer, and a site of small answers to nothing', () => {
    const { d } = downloads();
    expect(d.limit(SITE)).toBeUndefined();
    d.large(SITE);
    expect(d.limit(SITE)).toEqual({ limit: 8, starting: true });
    expect(d.limit('http://small.example')).toBeUndefined();
    // Nothing to tell other workers before a judgement.
    expect(d.hint(SITE)).toBeUndefined();
  });

  it('takes another worker\'s limit over its start, and keeps it when the next large answer comes', () => {
    const { d, changes } = downloads();
    d.large(SITE);
    d.take(SITE, { limit: 3, fastestMsPerMib: 400 });
    d.large(SITE);
    expect(d.limit(SITE)).toEqual({ limit: 3 });
    expect(changes).toEqual([{ kind: 'taken', limit: 3, fastestMsPerMib: 400 }]);
    expect(d.hint(SITE)).toEqual({ limit: 3, fastestMsPerMib: 400 });
  });

  it('leaves no trace of a limit it does not take, so the site still gets its start', () => {
    const { d, changes } = downloads(16);
    // At the worker's own cap: nothing to take.
    d.take(SITE, { limit: 16, fastestMsPerMib: 400 });
    expect(d.limit(SITE)).toBeUndefined();
    d.large(SITE);
    expect(d.limit(SITE)).toEqual({ limit: 8, starting: true });
    expect(changes).toEqual([]);
  });

  it('counts the requests open at a site until each ends', () => {
    const { d } = downloads();
    const a = d.start(SITE);
    const b = d.start(SITE);
    expect(d.openAt(SITE)).toBe(2);
    expect(a.maxOpen).toBe(2);
    d.end(a);
    d.end(b, { bytes: 100, transferMs: 5 });
    expect(d.openAt(SITE)).toBe(0);
  });
});
