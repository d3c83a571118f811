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

  /** `n` requests open at the site; the last refused with `status`, then the others answered `answer`. */
  function refusedWith(d: SiteDownloads, n: number, status = 503, answer = 200): void {
    const open = Array.from({ length: n }, () => d.start(SITE));
    d.refused(open[n - 1]!, status);
    d.end(open[n - 1]!, undefined, status);
    open.slice(0, -1).forEach((x) => d.end(x, undefined, answer));
  }

  it('holds a site that refused a request sent with others open, and answered those, below that number for ten minutes', () => {
    const { d, changes, clock } = downloads();
    // Refused with 4 others open, which it then answered (nginx limit_conn): at most 4 from now.
    refusedWith(d, 5);
    expect(d.limit(SITE)).toEqual({ limit: 4, refused: true });
    expect(changes).toEqual([{ kind: 'refused', limit: 4, status: 503, forMs: 600_000 }]);
    // A refusal within the hold (an image its server fails on) does not lower it, and keeps it
    // for ten minutes more: lowered each time, a few such images held a slow site to 2.
    clock.ms = 300_000;
    refusedWith(d, 4, 429);
    refusedWith(d, 3);
    expect(d.limit(SITE)).toEqual({ limit: 4, refused: true });
    expect(changes).toHaveLength(1);
    // Ten minutes after the last refusal the site may have as many again.
    clock.ms = 899_000;
    expect(d.limit(SITE)).toEqual({ limit: 4, refused: true });
    clock.ms = 900_000;
    expect(d.limit(SITE)).toBeUndefined();
    refusedWith(d, 3);
    expect(d.limit(SITE)).toEqual({ limit: 2, refused: true });
  });

  it('learns nothing from a site that refused every request open (down), or one with fewer than two others open, and keeps a lower limit of its own', () => {
    const { d, changes } = downloads();
    refusedWith(d, 8, 503, 503);
    refusedWith(d, 2);
    expect(d.limit(SITE)).toBeUndefined();
    expect(changes).toEqual([]);
    d.take(SITE, { limit: 3, fastestMsPerMib: 400 });
    refusedWith(d, 8);
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
