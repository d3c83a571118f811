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

  it('holds a site that refused a request sent with others open below that number, for ten minutes', () => {
    const { d, changes, clock } = downloads();
    const open = Array.from({ length: 5 }, () => d.start(SITE));
    // Refused with 4 others open (nginx limit_conn): at most 4 from now.
    d.refused(open[4]!, 503);
    open.forEach((x) => d.end(x));
    expect(d.limit(SITE)).toEqual({ limit: 4, refused: true });
    expect(changes).toEqual([{ kind: 'refused', limit: 4, status: 503, forMs: 600_000 }]);
    // A refusal with more open changes nothing; one with fewer lowers it.
    const more = Array.from({ length: 6 }, () => d.start(SITE));
    d.refused(more[5]!, 503);
    more.forEach((x) => d.end(x));
    expect(d.limit(SITE)).toEqual({ limit: 4, refused: true });
    clock.ms = 300_000;
    const fewer = Array.from({ length: 3 }, () => d.start(SITE));
    d.refused(fewer[2]!, 429);
    fewer.forEach((x) => d.end(x));
    expect(d.limit(SITE)).toEqual({ limit: 2, refused: true });
    expect(changes).toHaveLength(2);
    // Ten minutes after the last refusal the site may have as many again.
    clock.ms = 899_000;
    expect(d.limit(SITE)).toEqual({ limit: 2, refused: true });
    clock.ms = 900_000;
    expect(d.limit(SITE)).toBeUndefined();
  });

  it('learns nothing from a refusal with fewer than two others open, and keeps a lower limit of its own', () => {
    const { d, changes } = downloads();
    const [a, b] = [d.start(SITE), d.start(SITE)];
    d.refused(b, 503);
    [a, b].forEach((x) => d.end(x));
    expect(d.limit(SITE)).toBeUndefined();
    expect(changes).toEqual([]);
    d.take(SITE, { limit: 3, fastestMsPerMib: 400 });
    const open = Array.from({ length: 8 }, () => d.start(SITE));
    d.refused(open[7]!, 503);
    expect(d.limit(SITE)).toEqual({ limit: 3 });
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
