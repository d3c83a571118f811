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

  it('at a grant\'s start, waits an answer\'s time at a held site it sent nothing to in that time: another worker\'s requests may be open there', () => {
    const { d, clock } = downloads();
    // Five sent at 0, the fifth refused at once, the others answered after 800 ms: held to 4.
    const open = Array.from({ length: 5 }, () => d.start(SITE));
    d.refused(open[4]!, 503);
    d.end(open[4]!, undefined, 503);
    clock.ms = 800;
    open.slice(0, 4).forEach((x) => d.end(x, undefined, 200));
    expect(d.limit(SITE)).toEqual({ limit: 4, refused: true });
    // A grant of this worker's right after: its own requests are all it needs to count.
    clock.ms = 1_000;
    const mine = d.start(SITE);
    clock.ms = 1_500;
    expect(d.othersMayHold(SITE, 1_600)).toBe(false);
    expect(d.openAt(SITE)).toBe(1);
    clock.ms = 1_800;
    d.end(mine, undefined, 200);
    // A grant starting at 30 s, the window before it another worker's: none until 30.8 s.
    clock.ms = 30_000;
    expect(d.othersMayHold(SITE, 30_000)).toBe(true);
    expect(d.openAt(SITE)).toBe(4);
    clock.ms = 30_799;
    expect(d.openAt(SITE)).toBe(4);
    clock.ms = 30_800;
    expect(d.openAt(SITE)).toBe(0);
    // Answers grown to 20 s: it waits at most 5 s of a window.
    for (let i = 0; i < 20; i += 1) {
      const x = d.start(SITE);
      clock.ms += 20_000;
      d.end(x, undefined, 200);
    }
    const start = clock.ms + 60_000;
    clock.ms = start;
    expect(d.othersMayHold(SITE, start)).toBe(true);
    clock.ms = start + 4_999;
    expect(d.openAt(SITE)).toBe(4);
    clock.ms = start + 5_000;
    expect(d.openAt(SITE)).toBe(0);
    // A site not held: nothing to wait for.
    expect(d.othersMayHold('http://other.example', start)).toBe(false);
  });

  it('does not wait at a grant\'s start when the monitor granted the source nothing for longer than an answer takes before it', () => {
    const { d, clock } = downloads();
    d.takeRefusal(SITE, { limit: 4, forMs: 300_000, answerMs: 900 });
    clock.ms = 10_000;
    // After a Retry-After hold of 30 s: no request of the source's can be open at the site.
    expect(d.othersMayHold(SITE, 10_000, 30_000)).toBe(false);
    expect(d.openAt(SITE)).toBe(0);
    // Quiet for less than an answer's time: the window before may have been another worker's.
    expect(d.othersMayHold(SITE, 10_000, 899)).toBe(true);
    expect(d.openAt(SITE)).toBe(4);
    clock.ms = 10_900;
    expect(d.openAt(SITE)).toBe(0);
  });

  it('keeps to another worker\'s refusal hold from the monitor, tells its own, and waits at its first grant for the other\'s requests', () => {
    const { d, changes, clock } = downloads();
    expect(d.refusalHint(SITE)).toBeUndefined();
    d.take(SITE, { limit: 6, fastestMsPerMib: 400 });
    d.takeRefusal(SITE, { limit: 4, forMs: 300_000, answerMs: 900 });
    expect(d.limit(SITE)).toEqual({ limit: 4, refused: true });
    expect(changes.at(-1)).toEqual({ kind: 'refusal-taken', limit: 4, forMs: 300_000 });
    // Never sent to the site: the window before this grant's was another worker's.
    clock.ms = 10_000;
    expect(d.othersMayHold(SITE, 10_000)).toBe(true);
    expect(d.openAt(SITE)).toBe(4);
    clock.ms = 10_900;
    expect(d.openAt(SITE)).toBe(0);
    // Handed on as its own, for what is left; taken again, neither told twice nor shortened.
    expect(d.refusalHint(SITE)).toEqual({ limit: 4, forMs: 289_100, answerMs: 900 });
    d.takeRefusal(SITE, { limit: 5, forMs: 60_000, answerMs: 900 });
    expect(d.refusalHint(SITE)).toEqual({ limit: 4, forMs: 289_100, answerMs: 900 });
    expect(changes.filter((c) => c.kind === 'refusal-taken')).toHaveLength(1);
    // A lower limit from another worker wins; one about to end, or nonsense, is not taken.
    d.takeRefusal(SITE, { limit: 3, forMs: 60_000, answerMs: 900 });
    expect(d.limit(SITE)).toEqual({ limit: 3, refused: true });
    d.takeRefusal('http://other.example', { limit: 4, forMs: 500, answerMs: 900 });
    d.takeRefusal('http://third.example', { limit: 0, forMs: 60_000, answerMs: 900 });
    expect([d.limit('http://other.example'), d.limit('http://third.example')]).toEqual([undefined, undefined]);
    clock.ms = 300_000;
    expect(d.limit(SITE)).toEqual({ limit: 6 });
    expect(d.refusalHint(SITE)).toBeUndefined();
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
