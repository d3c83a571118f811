import { DEFAULT_OPEN_LIMIT, hintOf, newOpenLimitState, noteDownload, startingOpenLimitState, takeHint, type OpenLimitChange, type OpenLimitConfig, type OpenLimitState } from './openLimit';

const cfg: OpenLimitConfig = { ...DEFAULT_OPEN_LIMIT, max: 64 };

/**
 * A site whose link carries `linkMibPerS` shared evenly by the downloads open, each also at most
 * `perConnectionMibPerS`; the worker keeps as many open as it may (demand well above the site's).
 * A download ends every half second; returns the limit after each.
 */
function crawl(s: OpenLimitState, site: { linkMibPerS: number; perConnectionMibPerS: number }, fromMs: number, forMs: number, changes: OpenLimitChange[] = []): (number | null)[] {
  const limits: (number | null)[] = [];
  for (let t = fromMs; t < fromMs + forMs; t += 500) {
    const open = s.limit ?? cfg.max;
    const speed = Math.min(site.perConnectionMibPerS, site.linkMibPerS / open);
    const change = noteDownload(s, { msPerMib: 1_000 / speed, open, sentAtMs: t - 1_000 / speed }, t, cfg);
    if (change) changes.push(change);
    limits.push(s.limit);
  }
  return limits;
}

describe('open-download limit per site', () => {
  it('holds a site whose link is full to what it carries, probing one more now and then', () => {
    const s = newOpenLimitState();
    // The first download had the 1 MiB/s link to itself.
    noteDownload(s, { msPerMib: 1_000, open: 1, sentAtMs: 0 }, 1_000, cfg);
    const changes: OpenLimitChange[] = [];
    const limits = crawl(s, { linkMibPerS: 1, perConnectionMibPerS: Infinity }, 2_000, 600_000, changes);
    expect(changes[0]).toEqual({ kind: 'limited', limit: 2, medianMsPerMib: 64_000, fastestMsPerMib: 1_000, open: 53.5 });
    const later = limits.slice(limits.length / 5);
    expect(Math.max(...later.map((l) => l ?? Infinity))).toBeLessThanOrEqual(3);
    // Most of the time at two: a probe of three finds nothing gained and holds two for a minute.
    expect(later.filter((l) => l === 2).length / later.length).toBeGreaterThan(0.75);
    expect(changes.some((c) => c.kind === 'back')).toBe(true);
  });

  it('lifts the limit again from a site that is slow per connection, not full (a fluke fast download)', () => {
    const s = newOpenLimitState();
    noteDownload(s, { msPerMib: 100, open: 1, sentAtMs: 0 }, 1_000, cfg);
    const changes: OpenLimitChange[] = [];
    const limits = crawl(s, { linkMibPerS: Infinity, perConnectionMibPerS: 0.5 }, 2_000, 300_000, changes);
    expect(changes[0]).toMatchObject({ kind: 'limited', limit: 4 });
    expect(changes.some((c) => c.kind === 'back')).toBe(false);
    expect(changes.at(-1)).toMatchObject({ kind: 'lifted' });
    expect(limits.at(-1)).toBeNull();
  });

  it('climbs to what a link carries when more downloads fill it', () => {
    // 4 MiB/s, each download at most 1 MiB/s: four open fill it.
    const s = newOpenLimitState();
    noteDownload(s, { msPerMib: 1_000, open: 1, sentAtMs: 0 }, 1_000, cfg);
    const limits = crawl(s, { linkMibPerS: 4, perConnectionMibPerS: 1 }, 2_000, 900_000);
    const later = limits.slice(limits.length / 2);
    // Probes of three lose a quarter of the throughput, probes of five gain nothing: back to four.
    expect(later.filter((l) => l === 4).length / later.length).toBeGreaterThan(0.75);
    expect(Math.min(...later.map((l) => l ?? Infinity))).toBeGreaterThanOrEqual(3);
    expect(Math.max(...later.map((l) => l ?? Infinity))).toBeLessThanOrEqual(5);
  });

  it('sets no limit while few downloads are open, or for a worker reading bodies late', () => {
    const few = newOpenLimitState();
    noteDownload(few, { msPerMib: 500, open: 1, sentAtMs: 0 }, 1_000, cfg);
    for (let i = 0; i < 20; i++) expect(noteDownload(few, { msPerMib: 5_000, open: 2, sentAtMs: 11_000 + i }, 11_000 + i * 500, cfg)).toBeUndefined();
    const busy = newOpenLimitState();
    noteDownload(busy, { msPerMib: 50, open: 1, sentAtMs: 0 }, 1_000, cfg);
    // Eight times slower, but 0.35 s a MiB more: a turn of a busy event loop, not a site's link.
    for (let i = 0; i < 20; i++) expect(noteDownload(busy, { msPerMib: 400, open: 20, sentAtMs: 11_000 + i }, 11_000 + i * 500, cfg)).toBeUndefined();
    expect(few.limit).toBeNull();
    expect(busy.limit).toBeNull();
  });

  it('judges a limit only by downloads sent under it', () => {
    const s = newOpenLimitState();
    noteDownload(s, { msPerMib: 1_000, open: 1, sentAtMs: 0 }, 1_000, cfg);
    for (let i = 0; i < 6; i++) noteDownload(s, { msPerMib: 20_000, open: 20, sentAtMs: 1_000 }, 20_000 + i, cfg);
    expect(s.limit).toBe(2);
    // The downloads sent before the limit drain for a minute yet: neither a probe nor a lowering.
    for (let i = 0; i < 30; i++) expect(noteDownload(s, { msPerMib: 20_000, open: 20, sentAtMs: 1_000 + i }, 40_000 + i * 1_000, cfg)).toBeUndefined();
    expect(s.limit).toBe(2);
  });

  it('sets none under a worker whose own cap per site is already at the floor', () => {
    for (const max of [1, 2]) {
      const s = newOpenLimitState();
      noteDownload(s, { msPerMib: 1_000, open: 1, sentAtMs: 0 }, 1_000, { ...cfg, max });
      for (let i = 0; i < 20; i++) expect(noteDownload(s, { msPerMib: 50_000, open: 20, sentAtMs: 2_000 }, 60_000 + i * 1_000, { ...cfg, max })).toBeUndefined();
      expect(s.limit).toBeNull();
    }
  });
});

describe('a limit handed from worker to worker', () => {
  const fullLink = { linkMibPerS: 1, perConnectionMibPerS: Infinity };

  it('says nothing before a judgement, the limit after one, and null once the site bore any number', () => {
    const s = newOpenLimitState();
    noteDownload(s, { msPerMib: 1_000, open: 1, sentAtMs: 0 }, 1_000, cfg);
    expect(hintOf(s)).toBeUndefined();
    crawl(s, fullLink, 2_000, 20_000);
    expect(hintOf(s)).toEqual({ limit: s.limit, fastestMsPerMib: 1_000 });
    expect(s.limit).toBeGreaterThanOrEqual(2);
    const lifted = newOpenLimitState();
    noteDownload(lifted, { msPerMib: 100, open: 1, sentAtMs: 0 }, 1_000, cfg);
    crawl(lifted, { linkMibPerS: Infinity, perConnectionMibPerS: 0.5 }, 2_000, 300_000);
    expect(hintOf(lifted)).toEqual({ limit: null, fastestMsPerMib: expect.any(Number) });
  });

  it('holds a worker new to the site from its first download, and judges on from there', () => {
    const s = newOpenLimitState();
    expect(takeHint(s, { limit: 2, fastestMsPerMib: 1_000 }, 0, cfg)).toEqual({ kind: 'taken', limit: 2, fastestMsPerMib: 1_000 });
    const changes: OpenLimitChange[] = [];
    const limits = crawl(s, fullLink, 500, 600_000, changes);
    // Never the 64 a worker new to the site sent before it had judged six of its own downloads.
    expect(Math.max(...limits.map((l) => l ?? Infinity))).toBeLessThanOrEqual(3);
    expect(changes.some((c) => c.kind === 'probe-up')).toBe(true);
  });

  it('is lifted by the worker that took it when the site bears more now', () => {
    const s = newOpenLimitState();
    takeHint(s, { limit: 2, fastestMsPerMib: 2_000 }, 0, cfg);
    const changes: OpenLimitChange[] = [];
    const limits = crawl(s, { linkMibPerS: Infinity, perConnectionMibPerS: 0.5 }, 500, 600_000, changes);
    expect(limits.at(-1)).toBeNull();
    expect(hintOf(s)?.limit).toBeNull();
  });

  it('never replaces a judgement of the worker\'s own, and keeps within the worker\'s cap and the floor', () => {
    const own = newOpenLimitState();
    noteDownload(own, { msPerMib: 1_000, open: 1, sentAtMs: 0 }, 1_000, cfg);
    crawl(own, fullLink, 2_000, 20_000);
    const before = own.limit;
    expect(takeHint(own, { limit: 30, fastestMsPerMib: 1_000 }, 30_000, cfg)).toBeUndefined();
    expect(own.limit).toBe(before);
    const low = newOpenLimitState();
    expect(takeHint(low, { limit: 1, fastestMsPerMib: 1_000 }, 0, cfg)).toMatchObject({ limit: 2 });
    // At or above the worker's own cap (a worker with a lower CRAWL_MAX_CONNECTIONS_PER_SITE), or no limit: nothing to take.
    for (const hint of [{ limit: 64, fastestMsPerMib: 1_000 }, { limit: null, fastestMsPerMib: 1_000 }, { limit: 4, fastestMsPerMib: 0 }]) {
      const s = newOpenLimitState();
      expect(takeHint(s, hint, 0, cfg)).toBeUndefined();
      expect(s.limit).toBeNull();
    }
    const small = newOpenLimitState();
    expect(takeHint(small, { limit: 4, fastestMsPerMib: 1_000 }, 0, { ...cfg, max: 2 })).toBeUndefined();
  });
});

describe('a site of large images, before any judgement', () => {
  it('gets a few downloads at once: a full link is judged with 8 open, not the worker\'s 64', () => {
    const s = startingOpenLimitState(cfg);
    expect(s.limit).toBe(8);
    // The first download shared the 1 MiB/s link with a few others already.
    noteDownload(s, { msPerMib: 3_000, open: 3, sentAtMs: 0 }, 3_000, cfg);
    const changes: OpenLimitChange[] = [];
    const limits = crawl(s, { linkMibPerS: 1, perConnectionMibPerS: Infinity }, 3_500, 120_000, changes);
    expect(changes[0]).toMatchObject({ kind: 'limited', medianMsPerMib: 8_000, fastestMsPerMib: 3_000 });
    expect((changes[0] as { limit: number }).limit).toBeLessThanOrEqual(4);
    expect(Math.max(...limits.map((l) => l ?? Infinity))).toBeLessThanOrEqual(8);
    expect(limits.at(-1)).toBeLessThanOrEqual(3);
    expect(hintOf(s)?.limit).toBe(limits.at(-1));
  });

  it('doubles for a site that bears more, up to no limit', () => {
    const s = startingOpenLimitState(cfg);
    noteDownload(s, { msPerMib: 500, open: 1, sentAtMs: 0 }, 1_000, cfg);
    const changes: OpenLimitChange[] = [];
    const limits = crawl(s, { linkMibPerS: Infinity, perConnectionMibPerS: 2 }, 1_500, 20_000, changes);
    expect(changes.map((c) => c.kind === 'started' ? c.limit : c.kind)).toEqual([16, 32, 'lifted']);
    expect(limits.at(-1)).toBeNull();
    expect(hintOf(s)).toEqual({ limit: null, fastestMsPerMib: 500 });
  });

  it('does not double on downloads that were slower than the fastest, by less than the least excess (a worker starved of CPU)', () => {
    // Session 65's CI: every download was read late, the fastest too, having shared the link.
    const s = startingOpenLimitState(cfg);
    const changes: (OpenLimitChange | undefined)[] = [noteDownload(s, { msPerMib: 1_610, open: 8, sentAtMs: 0 }, 700, cfg)];
    for (let i = 1; i <= 12; i++) changes.push(noteDownload(s, { msPerMib: 2_550, open: 8, sentAtMs: i * 50 }, 700 + i * 150, cfg));
    expect(changes.filter(Boolean)).toEqual([]);
    expect(s.limit).toBe(8);
    expect(s.starting).toBe(true);
    // Once they are slower by more, it is a full link judged by the start's criterion.
    for (let i = 0; i < 6; i++) changes.push(noteDownload(s, { msPerMib: 2_700, open: 8, sentAtMs: 700 + i * 50 }, 3_000 + i * 150, cfg));
    expect(changes.filter(Boolean)).toEqual([expect.objectContaining({ kind: 'limited', limit: 6, fastestMsPerMib: 1_610 })]);
    expect(s.starting).toBeUndefined();
  });

  it('takes a fastest download that nothing matched for a minute as a fluke, and doubles for a site that bears more', () => {
    const s = startingOpenLimitState(cfg);
    // One download at 600 ms a MiB (a cached copy), then every one at 1 MiB/s of its own.
    noteDownload(s, { msPerMib: 600, open: 1, sentAtMs: 0 }, 600, cfg);
    const changes: OpenLimitChange[] = [];
    const limits = crawl(s, { linkMibPerS: Infinity, perConnectionMibPerS: 1 }, 1_000, 120_000, changes);
    // Held at the start for the minute (slower than 1.5 times the fastest, by less than 1 s a MiB)...
    expect(limits.slice(0, 110).every((l) => l === 8)).toBe(true);
    // ...then what each gets is the speed to keep, and the start doubles to no limit.
    expect(changes.map((c) => c.kind === 'started' ? c.limit : c.kind)).toEqual([16, 32, 'lifted']);
    expect(limits.at(-1)).toBeNull();
  });

  it('stays as it is while the site never has that many open, says nothing to other workers, and gives way to what one learnt', () => {
    const s = startingOpenLimitState(cfg);
    for (let i = 0; i < 30; i++) expect(noteDownload(s, { msPerMib: 500, open: 3, sentAtMs: i * 500 }, i * 500, cfg)).toBeUndefined();
    expect(s.limit).toBe(8);
    expect(hintOf(s)).toBeUndefined();
    expect(takeHint(s, { limit: 3, fastestMsPerMib: 400 }, 20_000, cfg)).toMatchObject({ kind: 'taken', limit: 3 });
    expect(s.starting).toBeUndefined();
    // Not for a worker whose own cap is as low.
    expect(startingOpenLimitState({ startOpen: 8, max: 8 }).limit).toBeNull();
    expect(startingOpenLimitState({ startOpen: 0, max: 64 }).limit).toBeNull();
  });
});
