import { DEFAULT_ADAPTIVE } from '../politeness/adaptiveRate';
import { DEFAULT_GOVERNOR, type GovernorConfig } from '../politeness/governor';
import { governorConfigOf, MonitorModel } from './monitorState';
import { behindNote, connectionsFullNote, detailsMarkdown, networkDownNote } from './monitorStats';

// The batch no longer asks again after using a grant; these pin the bookkeeping that makes
// that safe: the monitor subtracts every grant the batch has not acknowledged.
describe('MonitorModel token bookkeeping', () => {
  const T0 = 1_000_000;

  function modelWithBatch(): { m: MonitorModel; batchId: string } {
    const m = MonitorModel.fromInput({ source: 's', config: { rate: 10 }, work: [{ chunkId: 'c1', count: 500 }] }, T0);
    const [chunk] = m.takeChunksToStart();
    m.batchStarted('b1', chunk!);
    return { m, batchId: 'b1' };
  }

  it('counts granted slots against the last request until the batch reports again', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    const first = m.planGrants(T0);
    expect(first).toHaveLength(1);
    expect(first[0]!.slots).toBeLessThan(500); // a full window: rate 10 x 40 s
    expect(m.wants()[0]!.wanted).toBe(500 - first[0]!.slots);
  });

  it('shows the grant lead it uses in its stats: 300 ms until grants are seen to take longer', () => {
    const { m } = modelWithBatch();
    expect(m.stats(T0).tokens.leadMs).toBe(300);
    for (let k = 0; k < 3; k++) m.governor.noteDispatch(2_000);
    expect(m.stats(T0).tokens.leadMs).toBe(2_500);
  });

  it('takes the token request carried by an outcome report, including slots handed back', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    const [g1] = m.planGrants(T0);
    // The batch used grant 1, got 7 URLs back unused, and reports with its new count.
    const after = 500 - g1!.slots + 7;
    m.onReport({ batchId, grantId: 1, outcomes: [], unused: 7, tokens: { unassigned: after, grantsSeen: 1 } }, T0 + 5_000);
    expect(m.wants()[0]!.wanted).toBe(after);
  });

  it('still subtracts a grant the batch had not seen when it reported', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    const [g1] = m.planGrants(T0);
    const [g2] = m.planGrants(g1!.endMs);
    expect(g2).toBeDefined();
    // Report written after grant 1 only: grant 2 is still outstanding from the batch's view.
    m.onReport({ batchId, grantId: 1, outcomes: [], unused: 0, tokens: { unassigned: 500 - g1!.slots, grantsSeen: 1 } }, g1!.endMs + 10);
    expect(m.wants()[0]!.wanted).toBe(500 - g1!.slots - g2!.slots);
  });

  it('tells its grants what share of the latest grant\'s URLs needed no request, until a grant shows none did', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    const [g1] = m.planGrants(T0);
    expect(g1!.decidedShare).toBeUndefined();
    m.onReport({ batchId, grantId: 1, outcomes: [], unused: 0, decided: { items: 40, decided: 39 } }, T0 + 5_000);
    const [g2] = m.planGrants(g1!.endMs);
    expect(g2!.decidedShare).toBeCloseTo(0.975);
    m.onReport({ batchId, grantId: 2, outcomes: [], unused: 0, decided: { items: 40, decided: 0 } }, g1!.endMs + 5_000);
    expect(m.planGrants(g2!.endMs)[0]!.decidedShare).toBeUndefined();
  });

  it('tells its grants the longest Retry-After it honours when that is not the default', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    expect(m.planGrants(T0)[0]!.maxRetryAfterMs).toBeUndefined();
    const capped = MonitorModel.fromInput({
      source: 's', config: { rate: 10 }, work: [{ chunkId: 'c1', count: 500 }],
      governorConfig: { adaptive: { ...DEFAULT_ADAPTIVE, maxRetryAfterMs: 3_000 } },
    }, T0);
    capped.batchStarted('b1', capped.takeChunksToStart()[0]!);
    capped.onTokenRequest({ batchId: 'b1', unassigned: 500, grantsSeen: 0 });
    expect(capped.planGrants(T0)[0]!.maxRetryAfterMs).toBe(3_000);
  });

  it('tells its grants the source\'s maxConnections, and shows it', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    expect(m.planGrants(T0)[0]!.maxConnections).toBeUndefined();
    expect(m.stats(T0).maxConnections).toBeUndefined();
    const asked = MonitorModel.fromInput({ source: 's', config: { rate: 10, maxConnections: 2 }, work: [{ chunkId: 'c1', count: 500 }] }, T0);
    asked.batchStarted('b1', asked.takeChunksToStart()[0]!);
    asked.onTokenRequest({ batchId: 'b1', unassigned: 500, grantsSeen: 0 });
    expect(asked.planGrants(T0)[0]!.maxConnections).toBe(2);
    expect(asked.stats(T0).maxConnections).toBe(2);
    expect(detailsMarkdown(asked.stats(T0), 'running')).toMatch(/rate \*\*10\/s\*\* of target 10\/s \(burst 0\); at most 2 requests open at once \(maxConnections\)/);
    // Its slots passing for it: named as the operator's own limit, with what to change.
    const answered = { url: '', cls: 'done' as const, sent: true, final: true, attempt: 1, status: 200, ttfbMs: 900 };
    for (let i = 0; i < 5; i++) asked.onReport({ batchId: 'b1', grantId: 0, outcomes: Array.from({ length: 20 }, () => answered), unused: 80, missedSlots: 0, connectionWaits: { requests: 80, perSite: 2, given: true } }, T0 + i * 10_000);
    const held = asked.stats(T0 + 40_000);
    expect(held.connectionWaits).toEqual({ share: 0.67, perSite: 2, given: true });
    expect(connectionsFullNote(held)).toBe('site held by its maxConnections: 2 requests open at once, and 67% of its recent slots passed waiting for one to end, so it gets ' +
      'less than its 10/s: raise maxConnections in its catalogue entry (crawl start --catalog) if the site bears more at once, or lower its rate (crawl set-rate)');
    expect(detailsMarkdown(held, 'running')).toMatch(/\*\*Site held by its maxConnections\*\*: 2 requests open at once/);
  });

  it('hands the open-download limit a worker reported to its next grants, until a worker lifts it or an hour passes', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    const [g1] = m.planGrants(T0);
    expect(g1!.openLimits).toBeUndefined();
    const site = 'http://img.example';
    const other = 'http://cdn.example';
    m.onReport({ batchId, grantId: 1, outcomes: [], unused: 0, openLimits: { [site]: { limit: 3, fastestMsPerMib: 900 }, [other]: { limit: null, fastestMsPerMib: 40 } } }, T0 + 5_000);
    const [g2] = m.planGrants(g1!.endMs);
    expect(g2!.openLimits).toEqual({ [site]: { limit: 3, fastestMsPerMib: 900 } });
    expect(m.stats(g1!.endMs).openLimits).toEqual({ [site]: 3 });
    expect(detailsMarkdown(m.stats(g1!.endMs), 'running')).toContain('downloads open at once, as a worker found the site\'s link to bear (every worker keeps to it): 3 at http://img.example');
    // Carried through continue-as-new.
    const next = MonitorModel.fromInput({ source: 's', carried: JSON.parse(JSON.stringify(m.state)) }, T0);
    expect(next.stats(g1!.endMs).openLimits).toEqual({ [site]: 3 });
    // A later judgement replaces it; a worker that found the site bears any number drops it.
    m.onReport({ batchId, grantId: 2, outcomes: [], unused: 0, openLimits: { [site]: { limit: 2, fastestMsPerMib: 800 } } }, g1!.endMs + 5_000);
    expect(m.planGrants(g2!.endMs)[0]!.openLimits).toEqual({ [site]: { limit: 2, fastestMsPerMib: 800 } });
    m.onReport({ batchId, grantId: 3, outcomes: [], unused: 0, openLimits: { [site]: { limit: null, fastestMsPerMib: 800 } } }, g2!.endMs + 5_000);
    expect(m.planGrants(g2!.endMs + 60_000)[0]?.openLimits).toBeUndefined();
    expect(m.stats(g2!.endMs + 60_000).openLimits).toBeUndefined();
    expect(m.state.openLimits).toBeUndefined();
    // Not heard of for an hour: the link's load may have changed.
    m.onReport({ batchId, grantId: 4, outcomes: [], unused: 0, openLimits: { [site]: { limit: 4, fastestMsPerMib: 800 } } }, T0 + 200_000);
    expect(m.stats(T0 + 200_000 + 3_600_000).openLimits).toEqual({ [site]: 4 });
    expect(m.stats(T0 + 200_000 + 3_600_001).openLimits).toBeUndefined();
  });

  it('tells a grant to a refusal-held site how long before its window the source was granted nothing', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 5_000, grantsSeen: 0 });
    const [g1] = m.planGrants(T0);
    expect(g1!.quietBeforeMs).toBeUndefined();
    m.onReport({ batchId, grantId: 1, outcomes: [], unused: 0, refusals: { 'http://img.example': { limit: 4, forMs: 600_000, answerMs: 1_010 } } }, T0 + 5_000);
    // Planned ahead, as the monitor does: the window follows the one before directly.
    m.onTokenRequest({ batchId, unassigned: 5_000, grantsSeen: 1 });
    const [g2] = m.planGrants(g1!.endMs - 2_000);
    expect(g2!.startMs).toBe(g1!.endMs);
    expect(g2!.quietBeforeMs).toBeUndefined();
    // After a hold of 30 s (a Retry-After, a pause): nothing was granted in that time.
    m.onTokenRequest({ batchId, unassigned: 5_000, grantsSeen: 2 });
    const [g3] = m.planGrants(g2!.endMs + 30_000);
    expect(g3!.quietBeforeMs).toBe(Math.round(g3!.startMs - g2!.endMs));
    expect(g3!.quietBeforeMs).toBeGreaterThanOrEqual(30_000);
    // Told up to a minute.
    m.onTokenRequest({ batchId, unassigned: 5_000, grantsSeen: 3 });
    expect(m.planGrants(g3!.endMs + 120_000)[0]!.quietBeforeMs).toBe(60_000);
  });

  it('hands a site\'s refusal hold a worker reported to its next grants, for what is left of it, through continue-as-new', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    const [g1] = m.planGrants(T0);
    expect(g1!.refusals).toBeUndefined();
    const site = 'http://img.example';
    m.onReport({ batchId, grantId: 1, outcomes: [], unused: 0, refusals: { [site]: { limit: 4, forMs: 600_000, answerMs: 1_010 } } }, T0 + 5_000);
    // Its time is a duration: the next grant's worker holds it for what is left of it.
    const [g2] = m.planGrants(g1!.endMs);
    expect(g2!.refusals).toEqual({ [site]: { limit: 4, forMs: T0 + 605_000 - g1!.endMs, answerMs: 1_010 } });
    const next = MonitorModel.fromInput({ source: 's', carried: JSON.parse(JSON.stringify(m.state)) }, T0);
    expect(next.state.refusals).toEqual({ [site]: { limit: 4, untilMs: T0 + 605_000, answerMs: 1_010 } });
    // A worker's later report replaces it (a refusal within the hold kept it longer).
    m.onReport({ batchId, grantId: 2, outcomes: [], unused: 0, refusals: { [site]: { limit: 4, forMs: 600_000, answerMs: 990 } } }, T0 + 300_000);
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 2 });
    expect(m.planGrants(T0 + 890_000)[0]!.refusals).toEqual({ [site]: { limit: 4, forMs: 10_000, answerMs: 990 } });
    // Over: no longer handed on, nor kept.
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 3 });
    const late = m.planGrants(T0 + 900_000);
    expect(late).not.toHaveLength(0);
    expect(late[0]!.refusals).toBeUndefined();
    expect(m.state.refusals).toBeUndefined();
  });

  it('keeps the 16 sites it heard of last', () => {
    const { m, batchId } = modelWithBatch();
    for (let i = 0; i < 20; i++) m.onReport({ batchId, grantId: i, outcomes: [], unused: 0, openLimits: { [`http://h${i}.example`]: { limit: 2, fastestMsPerMib: 500 } } }, T0 + i);
    const kept = Object.keys(m.stats(T0 + 20).openLimits ?? {});
    expect(kept).toHaveLength(16);
    expect(kept).toContain('http://h19.example');
    expect(kept).not.toContain('http://h3.example');
  });

  it('takes a start input that sets one adaptive setting (Temporal CLI) without losing the others, and ignores a longest Retry-After that is no number', () => {
    const cfg = governorConfigOf({ adaptive: { maxRetryAfterMs: 60_000 } } as unknown as Partial<GovernorConfig>);
    expect(cfg.adaptive).toEqual({ ...DEFAULT_ADAPTIVE, maxRetryAfterMs: 60_000 });
    expect(cfg.breaker).toEqual(DEFAULT_GOVERNOR.breaker);
    expect(governorConfigOf({ adaptive: { maxRetryAfterMs: 'soon' } } as unknown as Partial<GovernorConfig>).adaptive.maxRetryAfterMs).toBe(DEFAULT_ADAPTIVE.maxRetryAfterMs);
    expect(governorConfigOf({ globalCeiling: 3 })).toEqual({ ...DEFAULT_GOVERNOR, globalCeiling: 3 });
  });

  it('counts only the outcomes that took a slot against its missed slots', () => {
    const outcomes = Array.from({ length: 40 }, () => ({ url: '', cls: 'robots' as const, sent: false, final: true, attempt: 1 }));
    const plain = modelWithBatch().m;
    plain.onReport({ batchId: 'b1', grantId: 1, outcomes, unused: 0, missedSlots: 10 }, T0);
    const ruledOut = modelWithBatch().m;
    // 30 of the 40 were ruled out without a slot: 10 served, 10 missed.
    ruledOut.onReport({ batchId: 'b1', grantId: 1, outcomes, unused: 0, missedSlots: 10, decided: { items: 40, decided: 30 } }, T0);
    expect(ruledOut.state.missRate).toBeGreaterThan(plain.state.missRate);
    expect(ruledOut.state.missRate).toBeCloseTo(2.5 * plain.state.missRate, 5);
  });

  it('follows the latest images in a row that were one file, across reports, for the placeholder note', () => {
    const { m } = modelWithBatch();
    const image = (sha: string) => ({ url: '', cls: 'done' as const, sent: true, final: true, attempt: 1, sha });
    m.onReport({ batchId: 'b1', grantId: 1, outcomes: [image('11111111'), ...Array.from({ length: 30 }, () => image('6450ba3e'))], unused: 0 }, T0);
    m.onReport({ batchId: 'b1', grantId: 2, outcomes: [{ url: '', cls: 'linkrot', status: 404, sent: true, final: true, attempt: 1 }, ...Array.from({ length: 20 }, () => image('6450ba3e'))], unused: 0 }, T0 + 5_000);
    expect(m.stats(T0 + 5_000).sameImage).toEqual({ sha: '6450ba3e', run: 50 });
    m.onReport({ batchId: 'b1', grantId: 3, outcomes: [image('22222222')], unused: 0 }, T0 + 10_000);
    expect(m.stats(T0 + 10_000).sameImage).toEqual({ sha: '22222222', run: 1 });
  });

  it('shows what a site wrote in the Web UI\'s details as text, not as a link or markup', () => {
    const { m } = modelWithBatch();
    // A block page whose first words are a markdown link, 50 times: the halt names the last.
    const page = { url: '', cls: 'content' as const, sent: true, final: true, attempt: 1, page: true as const, reason: 'not an image: text starting "[Verify](https://evil.example/) <b>now</b>"' };
    m.onReport({ batchId: 'b1', grantId: 1, outcomes: Array.from({ length: 50 }, () => page), unused: 0 }, T0);
    const details = detailsMarkdown(m.stats(T0), 'halted');
    expect(details).toContain('text starting "\\[Verify\\]\\(https://evil.example/\\) \\<b\\>now\\</b\\>"');
    expect(details).not.toMatch(/[^\\]\[Verify\]\(/);
    expect(details).toMatch(/^\*\*HALTED\*\*: its first 50 answers/m);
  });

  it('says why a running source is below its target, and when the ramp brings it back: a 429, its TTFB, a temporary halt', () => {
    const { m } = modelWithBatch();
    expect(m.stats(T0).slowed).toBeNull();
    const done = (ttfbMs: number) => ({ url: '', cls: 'done' as const, status: 200, sent: true, final: true, attempt: 1, ttfbMs });
    m.onReport({ batchId: 'b1', grantId: 1, outcomes: [done(50), { url: '', cls: 'error', status: 429, sent: true, final: false, attempt: 1, retryAfterMs: 30_000, atMs: T0 }], unused: 0 }, T0);
    // Halved to 5/s, held 30 s, then 10/180 a second: 5/s more takes 90 s.
    expect(m.stats(T0).slowed).toEqual({ by: 'a 429 (Retry-After 30 s)', at: new Date(T0).toISOString(), backAt: new Date(T0 + 30_000 + 90_000).toISOString() });
    expect(detailsMarkdown(m.stats(T0), 'running')).toContain(`slowed by a 429 (Retry-After 30 s) at ${new Date(T0).toISOString()}: back at 10/s by ${new Date(T0 + 120_000).toISOString()} unless slowed again`);
    m.governor.tick(T0 + 200_000);
    expect(m.stats(T0 + 200_000).slowed).toBeNull();
    m.onReport({ batchId: 'b1', grantId: 2, outcomes: Array.from({ length: 20 }, () => done(50)), unused: 0 }, T0 + 210_000);
    m.onReport({ batchId: 'b1', grantId: 3, outcomes: Array.from({ length: 21 }, () => done(400)), unused: 0 }, T0 + 220_000);
    expect(m.stats(T0 + 220_000).slowed).toMatchObject({ by: 'its TTFB (median 400 ms against a baseline of 50 ms)', at: new Date(T0 + 220_000).toISOString() });
    m.governor.tick(T0 + 1_000_000);
    const failed = { url: '', cls: 'error' as const, status: 500, sent: true, final: false, attempt: 1 };
    m.onReport({ batchId: 'b1', grantId: 4, outcomes: [...Array.from({ length: 20 }, () => done(50)), ...Array.from({ length: 5 }, () => failed)], unused: 0 }, T0 + 1_010_000);
    // Cooling: the temporary halt's own note says so; once it ends, the reduced rate names it.
    expect(m.stats(T0 + 1_010_000).slowed).toBeNull();
    m.governor.tick(T0 + 1_080_000);
    expect(m.stats(T0 + 1_080_000).slowed).toMatchObject({ by: 'a temporary halt (5/25 requests failed in 60 s)' });
  });

  it('says a Retry-After longer than the longest honoured was held only that long', () => {
    const { m } = modelWithBatch();
    const day = 86_400_000;
    m.onReport({ batchId: 'b1', grantId: 1, outcomes: [{ url: '', cls: 'error', status: 503, sent: true, final: false, attempt: 1, retryAfterMs: day, atMs: T0 }], unused: 0 }, T0);
    // Held 900 s (the default longest), not a day; then 5/s more at 10/180 a second takes 90 s.
    expect(m.stats(T0).slowed).toEqual({ by: 'a 503 (Retry-After a day or more; held 900 s, the longest honoured)', at: new Date(T0).toISOString(), backAt: new Date(T0 + 900_000 + 90_000).toISOString() });
  });

  it('says its slots pass for the worker\'s network, not a worker behind, while grants report it, and up to five minutes after', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    for (let i = 0; i < 10; i++) m.onReport({ batchId, grantId: 0, outcomes: [], unused: 0, missedSlots: 10, networkDown: true }, T0 + i * 1_000);
    const down = m.stats(T0 + 9_000);
    // Not a busy worker: its windows keep their length, and no "workers behind" follows.
    expect(down.tokens).toMatchObject({ missed: 100, missRate: 0 });
    expect(down.networkDownAt).toBe(new Date(T0 + 9_000).toISOString());
    expect(behindNote(down)).toBeUndefined();
    expect(networkDownNote(down)).toMatch(/^worker's network down: no site answered .*nothing counts against the site/);
    expect(detailsMarkdown(down, 'running')).toMatch(/\*\*Worker's network down\*\*/);
    expect(detailsMarkdown(down, 'running')).not.toMatch(/Workers behind/);
    // Old news after five minutes; and a grant that sent ends it at once.
    expect(m.stats(T0 + 9_000 + 299_000).networkDownAt).not.toBeNull();
    expect(m.stats(T0 + 9_000 + 301_000).networkDownAt).toBeNull();
    expect(behindNote(m.stats(T0 + 9_000 + 301_000))).toBeUndefined();
    const sent = [{ url: '', cls: 'done' as const, sent: true, final: true, attempt: 1 }];
    m.onReport({ batchId, grantId: 0, outcomes: sent, unused: 0, missedSlots: 0 }, T0 + 10_000);
    expect(m.stats(T0 + 10_000).networkDownAt).toBeNull();
  });

  it('leaves the bookkeeping alone for a report without a token request', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    const [g1] = m.planGrants(T0);
    m.onReport({ batchId, grantId: 1, outcomes: [], unused: 3 }, T0 + 5_000);
    expect(m.wants()[0]!.wanted).toBe(500 - g1!.slots);
  });

  it('tells a site too slow for its rate from a worker behind: its requests waited for a connection', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    const answered = (ttfbMs: number) => ({ url: '', cls: 'done' as const, sent: true, final: true, attempt: 1, status: 200, ttfbMs });
    // A grant of 12 sent 8 (four slots passed), 3 of them after waiting for one of the worker's
    // 4 connections to the site; its answers took 500 ms: 4 at once bear about 8/s of its 10/s.
    for (let i = 0; i < 10; i++) m.onReport({ batchId, grantId: 0, outcomes: Array.from({ length: 8 }, () => answered(500)), unused: 4, missedSlots: 4, connectionWaits: { requests: 3, perSite: 4 } }, T0 + i * 1_000);
    const slow = m.stats(T0 + 9_000);
    expect(slow.tokens.missRate).toBeGreaterThan(0.3);
    expect(slow.connectionWaits).toEqual({ share: 0.36, perSite: 4 });
    expect(behindNote(slow)).toBeUndefined();
    expect(connectionsFullNote(slow)).toBe('site answers slowly: 36% of its recent requests waited for a connection, every one of the worker\'s 4 connections to it ' +
      'waiting for an answer (median time to first byte 0.5 s), so it gets at most about 8/s of its 10/s: lower its rate (crawl set-rate), or, if the site can bear ' +
      'more requests at once, raise CRAWL_MAX_CONNECTIONS_PER_SITE');
    expect(detailsMarkdown(slow, 'running')).toMatch(/\*\*Site answers slowly\*\*: 36%/);
    expect(detailsMarkdown(slow, 'running')).not.toMatch(/Workers behind/);
    // Grants whose requests found free connections: the share falls away, and misses are the worker's again.
    for (let i = 0; i < 10; i++) m.onReport({ batchId, grantId: 0, outcomes: Array.from({ length: 8 }, () => answered(500)), unused: 4, missedSlots: 4 }, T0 + 20_000 + i * 1_000);
    const behind = m.stats(T0 + 29_000);
    expect(connectionsFullNote(behind)).toBeUndefined();
    expect(behindNote(behind)).toMatch(/^workers behind: /);
    // A share of requests waiting now and then (a site at its edge) is no note.
    for (let i = 0; i < 10; i++) m.onReport({ batchId, grantId: 0, outcomes: Array.from({ length: 8 }, () => answered(500)), unused: 0, missedSlots: 0, connectionWaits: { requests: 1, perSite: 4 } }, T0 + 40_000 + i * 1_000);
    expect(connectionsFullNote(m.stats(T0 + 49_000))).toBeUndefined();
  });

  it('says a site is held to the downloads its link bears, with no advice to raise the worker\'s connections', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    const answered = { url: '', cls: 'done' as const, sent: true, final: true, attempt: 1, status: 200, ttfbMs: 20 };
    // Grants of 50 slots at 5/s that sent 20: the others passed while the site had its 2 open.
    for (let i = 0; i < 5; i++) m.onReport({ batchId, grantId: 0, outcomes: Array.from({ length: 20 }, () => answered), unused: 30, missedSlots: 0, connectionWaits: { requests: 30, perSite: 2, learnt: true } }, T0 + i * 10_000);
    const held = m.stats(T0 + 40_000);
    expect(held.connectionWaits).toEqual({ share: 0.5, perSite: 2, learnt: true });
    expect(connectionsFullNote(held)).toBe('site answers slowly: its downloads slowed as more were open, so the worker keeps 2 open at once, the most it was found ' +
      'to bear, and 50% of its recent slots passed waiting for one to end: it gets less than its 10/s (the worker tries more at once now and then)');
    expect(behindNote(held)).toBeUndefined();
    // A rate part-way up its ramp reads as the status table shows it.
    expect(connectionsFullNote({ ...held, rate: 3.7512 })).toMatch(/less than its 3\.75\/s /);
    // A worker's own connections full again (no limit learnt by it) is told as before.
    for (let i = 0; i < 5; i++) m.onReport({ batchId, grantId: 0, outcomes: Array.from({ length: 20 }, () => answered), unused: 30, missedSlots: 0, connectionWaits: { requests: 20, perSite: 64 } }, T0 + 50_000 + i * 10_000);
    expect(connectionsFullNote(m.stats(T0 + 90_000))).toMatch(/raise CRAWL_MAX_CONNECTIONS_PER_SITE$/);
  });

  it('says a site of large images is held to the worker\'s start until it has seen how they fare, then as learnt', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    const answered = { url: '', cls: 'done' as const, sent: true, final: true, attempt: 1, status: 200, ttfbMs: 20 };
    for (let i = 0; i < 5; i++) m.onReport({ batchId, grantId: 0, outcomes: Array.from({ length: 20 }, () => answered), unused: 30, missedSlots: 0, connectionWaits: { requests: 30, perSite: 8, learnt: true, starting: true } }, T0 + i * 10_000);
    const held = m.stats(T0 + 40_000);
    expect(held.connectionWaits).toEqual({ share: 0.5, perSite: 8, learnt: true, starting: true });
    expect(connectionsFullNote(held)).toBe('site answers slowly: its images are large, and the worker keeps 8 of them downloading at once until it has seen how they fare, ' +
      'so 50% of its recent slots passed waiting for one to end: it gets less than its 10/s for now (the worker allows twice as many each time that many keep their speed)');
    expect(detailsMarkdown(held, 'running')).toMatch(/\*\*Site answers slowly\*\*: its images are large/);
    m.onReport({ batchId, grantId: 0, outcomes: Array.from({ length: 20 }, () => answered), unused: 30, missedSlots: 0, connectionWaits: { requests: 30, perSite: 3, learnt: true } }, T0 + 50_000);
    expect(m.stats(T0 + 50_000).connectionWaits).toEqual({ share: 0.53, perSite: 3, learnt: true });
    expect(connectionsFullNote(m.stats(T0 + 50_000))).toMatch(/^site answers slowly: its downloads slowed as more were open, so the worker keeps 3 open at once/);
  });

  it('says a site is held below the number at which it refused a request, and what to do', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    const answered = { url: '', cls: 'done' as const, sent: true, final: true, attempt: 1, status: 200, ttfbMs: 1_000 };
    for (let i = 0; i < 5; i++) m.onReport({ batchId, grantId: 0, outcomes: Array.from({ length: 20 }, () => answered), unused: 30, missedSlots: 0, connectionWaits: { requests: 30, perSite: 4, learnt: true, refused: true } }, T0 + i * 10_000);
    const held = m.stats(T0 + 40_000);
    expect(held.connectionWaits).toEqual({ share: 0.5, perSite: 4, learnt: true, refused: true });
    expect(connectionsFullNote(held)).toBe('site refuses requests beyond 4 open at once (it answered 429 or 503, or 509 or 529, to one sent with that many open), so the worker keeps to 4 ' +
      'for 10 minutes, and 50% of its recent slots passed waiting for one to end: it gets less than its 10/s (lower its rate with crawl set-rate, or give it maxConnections in its catalogue entry)');
    // Once the hold is over the worker's reports say so, and so does the note.
    m.onReport({ batchId, grantId: 0, outcomes: Array.from({ length: 20 }, () => answered), unused: 30, missedSlots: 0, connectionWaits: { requests: 30, perSite: 64 } }, T0 + 50_000);
    expect(m.stats(T0 + 50_000).connectionWaits?.refused).toBeUndefined();
  });

  it('gives a batch whose worker misses slots enough spare slots to finish its last window', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 12, grantsSeen: 0 });
    const outcomes = Array.from({ length: 6 }, () => ({ url: '', cls: 'done' as const, sent: true, final: true, attempt: 1 }));
    // Half the slots of a grant went by while the worker was busy.
    for (let i = 0; i < 10; i++) m.onReport({ batchId, grantId: 0, outcomes, unused: 6, missedSlots: 6 }, T0);
    expect(m.stats(T0).tokens).toMatchObject({ missed: 60, missRate: 0.49 }); // 6 of 12 a report, averaged from 0
    const [g] = m.planGrants(T0);
    expect(g!.slots).toBeGreaterThanOrEqual(23); // 12 wanted, ~50% missed
    expect(g!.slots).toBeLessThanOrEqual(24);
    expect(m.wants()[0]!.wanted).toBe(0);
  });

  it('plans two spare slots when no slot was missed', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 12, grantsSeen: 0 });
    m.onReport({ batchId, grantId: 0, outcomes: [], unused: 0, missedSlots: 0 }, T0);
    expect(m.planGrants(T0)[0]!.slots).toBe(14);
  });

  describe('a source\'s last window', () => {
    /** A source at 1 req/s with `chunks` chunks of 3 URLs, `started` of them batches asking for all their URLs. */
    const source = (chunks: number, started: number) => {
      const work = Array.from({ length: chunks }, (_, k) => ({ chunkId: `c${k}`, count: 3 }));
      const m = MonitorModel.fromInput({ source: 's', config: { rate: 1 }, work, options: { maxBatches: started } }, T0);
      for (const [k, chunk] of m.takeChunksToStart().entries()) {
        m.batchStarted(`b${k}`, chunk);
        m.onTokenRequest({ batchId: `b${k}`, unassigned: 3, grantsSeen: 0 });
      }
      return m;
    };
    const always = () => true;

    it('gives the one batch left spare slots for a start 5 s late', () => {
      const [g] = source(1, 1).planGrants(T0, false, always);
      expect(g!.slots).toBe(3 + 5);
      expect(g!.endMs - g!.startMs).toBeGreaterThanOrEqual(8_000);
    });

    it('opens it after the configured lead, not a learnt longer one: its spares absorb a late start', () => {
      const m = source(1, 1);
      for (let k = 0; k < 3; k++) m.governor.noteDispatch(4_000); // a busy worker: trips of 4 s
      expect(m.governor.leadMs()).toBe(5_000);
      const [g] = m.planGrants(T0, false, always);
      expect(g!.startMs).toBe(T0 + 300);
      expect(g!.slots).toBe(3 + 10); // spares for a start 10 s late: twice the learnt lead
      // Two batches: the learnt lead, and the usual spares.
      const two = source(2, 2);
      for (let k = 0; k < 3; k++) two.governor.noteDispatch(4_000);
      expect(two.planGrants(T0, false, always)[0]!.startMs).toBe(T0 + 5_000);
    });

    it('keeps the usual two spares while another batch wants slots, a chunk waits, or the history is older', () => {
      const asked: string[] = [];
      const ask = () => { asked.push('asked'); return true; };
      expect(source(2, 2).planGrants(T0, false, ask).map((g) => g.slots)).toEqual([5, 5]);
      expect(source(2, 1).planGrants(T0, false, ask).map((g) => g.slots)).toEqual([5]);
      expect(asked).toEqual([]); // the patch is asked about only for a last window
      expect(source(1, 1).planGrants(T0, false, () => false).map((g) => g.slots)).toEqual([5]);
      expect(source(1, 1).planGrants(T0).map((g) => g.slots)).toEqual([5]);
    });
  });

  describe('a source whose whole work fits in one usual window', () => {
    const source = (urls: number) => {
      const m = MonitorModel.fromInput({ source: 's', config: { rate: 1 }, work: [{ chunkId: 'c0', count: urls }] }, T0);
      const [chunk] = m.takeChunksToStart();
      m.batchStarted('b0', chunk!);
      m.onTokenRequest({ batchId: 'b0', unassigned: urls, grantsSeen: 0 });
      return m;
    };
    const always = () => true;

    it('gets it in one grant instead of a short first window and a second grant mid-crawl', () => {
      const [whole] = source(25).planGrants(T0, true, always, always);
      expect(whole!.slots).toBeGreaterThanOrEqual(25);
      // Without the patch (a history from before it): the first window of at most 10 s.
      const [short] = source(25).planGrants(T0, true, always, () => false);
      expect(short!.slots).toBeLessThanOrEqual(10);
    });

    it('keeps the short first window for a source larger than a window, without asking the patch', () => {
      const asked: string[] = [];
      const [g] = source(500).planGrants(T0, true, always, () => { asked.push('asked'); return true; });
      expect(g!.slots).toBeLessThanOrEqual(10);
      expect(asked).toEqual([]);
    });
  });

  describe('a batch whose first grant rides in its start input', () => {
    const started = () => {
      const m = MonitorModel.fromInput({ source: 's', config: { rate: 10 }, work: [{ chunkId: 'c1', count: 500 }] }, T0);
      m.batchStarted('b1', m.takeChunksToStart()[0]!, true);
      return m;
    };

    it('counts as asking for its whole chunk before any request comes', () => {
      const m = started();
      expect(m.wants()).toEqual([{ batchId: 'b1', wanted: 500 }]);
      const [g] = m.planGrants(T0);
      expect(g!.batchId).toBe('b1');
      // Its first report then counts against that grant as any other batch's would.
      expect(m.wants()[0]!.wanted).toBe(500 - g!.slots);
      // Without asking, a started batch wants nothing until its request comes.
      const quiet = MonitorModel.fromInput({ source: 's', config: { rate: 10 }, work: [{ chunkId: 'c1', count: 500 }] }, T0);
      quiet.batchStarted('b1', quiet.takeChunksToStart()[0]!);
      expect(quiet.planGrants(T0)).toEqual([]);
    });

    it('lets the last window planned float, keeping the timeline free behind it, and no other', () => {
      const m = started();
      const [g] = m.planGrants(T0);
      const floating = m.floatGrant(g!, 15_000);
      expect(floating.floatMs).toBe(15_000);
      // The next window opens after the float, unless the batch's report gives the tail back.
      m.onTokenRequest({ batchId: 'b1', unassigned: 500, grantsSeen: 0 });
      const [next] = m.planGrants(g!.endMs + 15_000);
      expect(next!.startMs).toBeGreaterThanOrEqual(g!.endMs + 15_000);
      // A window planned after it is in the way: that one cannot float any more.
      expect(m.floatGrant(g!, 15_000).floatMs).toBeUndefined();
    });

    it('takes the ask and the grant back when the batch existed already (it asks for itself)', () => {
      const m = started();
      const [g] = m.planGrants(T0);
      m.withdrawAsk('b1', g);
      expect(m.wants()).toEqual([{ batchId: 'b1', wanted: 0 }]);
      expect(m.stats(T0).tokens.granted).toBe(0);
      // Its own request then counts from its own grants: none of ours is subtracted.
      m.onTokenRequest({ batchId: 'b1', unassigned: 40, grantsSeen: 0 });
      expect(m.wants()[0]!.wanted).toBe(40);
      const [next] = m.planGrants(g!.endMs);
      expect(next!.grantId).toBeGreaterThan(g!.grantId);
      expect(next!.startMs).toBeGreaterThanOrEqual(g!.endMs); // its window stays used
    });
  });

  it('grants a longer window while its worker misses slots, so a grant still serves a window of URLs', () => {
    const fast = () => {
      const m = MonitorModel.fromInput({ source: 's', config: { rate: 50 }, work: [{ chunkId: 'c1', count: 500 }] }, T0);
      m.batchStarted('b1', m.takeChunksToStart()[0]!);
      m.onTokenRequest({ batchId: 'b1', unassigned: 500, grantsSeen: 0 });
      return m;
    };
    const usual = fast().planGrants(T0)[0]!;
    const busy = fast();
    const outcomes = Array.from({ length: 50 }, () => ({ url: '', cls: 'done' as const, sent: true, final: true, attempt: 1 }));
    // The worker sent in half the slots: its CPU is the limit, not the site.
    for (let i = 0; i < 10; i++) busy.onReport({ batchId: 'b1', grantId: 0, outcomes, unused: 0, missedSlots: 50 }, T0);
    const stretched = busy.planGrants(T0)[0]!;
    expect(stretched.intervalMs).toBe(usual.intervalMs); // the site's load is unchanged
    expect(stretched.endMs - stretched.startMs).toBeGreaterThan(1.9 * (usual.endMs - usual.startMs));
    expect(stretched.slots).toBeGreaterThan(1.9 * usual.slots);
    expect(busy.wants()[0]!.wanted).toBe(Math.max(0, 500 - stretched.slots));
  });
});

// A photo site of hundreds of millions of images must fit in the monitor's state: it is one
// argument of continue-as-new, and Temporal refuses payloads over 2 MB.
describe('MonitorModel work queue', () => {
  const T0 = 1_000_000;
  const range = (first: number, last: number, lastCount = 500) =>
    ({ idPrefix: 'm1-', spoolPrefix: 'work/m1/big/chunk-', first, last, chunkSize: 500, lastCount });
  const model = () => MonitorModel.fromInput({ source: 'big', config: { rate: 200 }, options: { maxBatches: 3 } }, T0);

  it('keeps a source of 500 million URLs, sent 200 chunks at a time, in a state of a few hundred bytes', () => {
    const m = model();
    const chunks = 1_000_000;
    for (let first = 0; first < chunks; first += 200) m.addWork([range(first, Math.min(first + 199, chunks - 1), first + 199 >= chunks - 1 ? 123 : 500)]);
    expect(m.state.totalUrls).toBe((chunks - 1) * 500 + 123);
    expect(m.state.queue).toHaveLength(1);
    expect(JSON.stringify(m.state).length).toBeLessThan(3_000);
    expect(m.stats(T0).urls.queuedChunks).toBe(chunks);
  });

  it('hands out the chunks of a range in order, each with its own file and count', () => {
    const m = model();
    m.addWork([range(7, 10, 42)]);
    expect(m.takeChunksToStart()).toEqual([
      { chunkId: 'm1-7', count: 500, spool: 'work/m1/big/chunk-000007.txt' },
      { chunkId: 'm1-8', count: 500, spool: 'work/m1/big/chunk-000008.txt' },
      { chunkId: 'm1-9', count: 500, spool: 'work/m1/big/chunk-000009.txt' },
    ]);
    m.batchStarted('b7', { chunkId: 'm1-7', count: 500 });
    expect(m.takeChunksToStart()).toEqual([{ chunkId: 'm1-10', count: 42, spool: 'work/m1/big/chunk-000010.txt' }]);
    expect(m.state.queue).toHaveLength(0);
  });

  it('adds only the chunks it has not seen: the same manifest started twice crawls nothing twice', () => {
    const m = model();
    expect(m.addWork([range(0, 9)])).toBe(10);
    m.takeChunksToStart();
    expect(m.addWork([range(0, 9)])).toBe(0); // some already handed out, the rest queued
    expect(m.addWork([range(5, 14, 7)])).toBe(5);
    expect(m.state.totalUrls).toBe(10 * 500 + 4 * 500 + 7);
    expect(m.state.seenRanges).toEqual({ 'm1-': [[0, 14]] });
    // Chunks found done at start break a range in two: both parts are queued, nothing else.
    const n = model();
    expect(n.addWork([range(0, 2), range(5, 6, 9)])).toBe(5);
    expect(n.state.queue).toHaveLength(2);
    expect(n.state.totalUrls).toBe(4 * 500 + 9);
  });

  it('carries the queue and what it has seen across continue-as-new', () => {
    const m = model();
    m.addWork([range(0, 99)]);
    m.takeChunksToStart();
    const next = MonitorModel.fromInput({ source: 'big', carried: JSON.parse(JSON.stringify(m.state)), work: [range(0, 199)] }, T0);
    expect(next.stats(T0).urls.queuedChunks).toBe(97 + 100);
    expect(next.takeChunksToStart()[0]!.chunkId).toBe('m1-3');
  });
});

describe('MonitorModel progress', () => {
  it('counts URLs finished as their final outcomes are reported, before their batch finishes', () => {
    const T0 = 1_000_000;
    const m = MonitorModel.fromInput({ source: 's', config: { rate: 10 }, work: [{ chunkId: 'c1', count: 500 }] }, T0);
    const [chunk] = m.takeChunksToStart();
    m.batchStarted('b1', chunk!);
    const outcome = (cls: 'done' | 'linkrot' | 'error', final: boolean) => ({ url: '', cls, sent: true, final, attempt: 1, status: cls === 'done' ? 200 : 404, ttfbMs: 5 });
    m.onReport({ batchId: 'b1', grantId: 1, unused: 0, outcomes: [outcome('done', true), outcome('done', true), outcome('linkrot', true), outcome('error', false)] }, T0 + 1_000);
    expect(m.stats(T0 + 1_000).urls).toMatchObject({ total: 500, finished: 3 });
    m.onBatchFinished({ batchId: 'b1', chunkId: 'c1', urls: 500 });
    expect(m.stats(T0 + 2_000).urls.finished).toBe(500);
  });
});

describe('MonitorModel stats: what holds a source', () => {
  const T0 = 1_000_000;

  it('names a robots.txt Crawl-delay wait as such, and a Retry-After as a Retry-After', () => {
    const m = MonitorModel.fromInput({ source: 's', config: { rate: 10 }, work: [{ chunkId: 'c1', count: 500 }] }, T0);
    const [chunk] = m.takeChunksToStart();
    m.batchStarted('b1', chunk!);
    m.onReport({ batchId: 'b1', grantId: 1, outcomes: [], unused: 20, crawlDelayMs: 5_000 }, T0);
    expect(m.stats(T0 + 1_000)).toMatchObject({ crawlDelayUntil: new Date(T0 + 5_000).toISOString(), retryAfterUntil: null, siteMaxRate: 0.2 });
    // A 429 whose Retry-After outlasts the wait: that is what holds the source now.
    m.onReport({ batchId: 'b1', grantId: 2, outcomes: [], unused: 0, retryAfterMs: 30_000 }, T0 + 2_000);
    expect(m.stats(T0 + 3_000)).toMatchObject({ retryAfterUntil: new Date(T0 + 32_000).toISOString(), crawlDelayUntil: null });
    // Neither once the hold has passed.
    expect(m.stats(T0 + 40_000)).toMatchObject({ retryAfterUntil: null, crawlDelayUntil: null });
  });

  it('holds a source whose site said its quota is spent until it resets, without lowering the rate, and grants nothing meanwhile', () => {
    const m = MonitorModel.fromInput({ source: 's', config: { rate: 10 }, work: [{ chunkId: 'c1', count: 500 }] }, T0);
    const [chunk] = m.takeChunksToStart();
    m.batchStarted('b1', chunk!);
    const ok = { url: '', cls: 'done' as const, sent: true, final: true, attempt: 1, status: 200, ttfbMs: 5 };
    const events = m.onReport({ batchId: 'b1', grantId: 1, outcomes: [ok, ok, ok], unused: 17, quotaHoldMs: 40_000, quotaLimit: 3 }, T0);
    expect(events).toContainEqual({ event: 'quota-spent', detail: 'the site\'s rate-limit headers say none of its 3 requests left; nothing sent for 40 s, until its quota resets' });
    expect(m.stats(T0 + 1_000)).toMatchObject({ quotaUntil: new Date(T0 + 40_000).toISOString(), quotaLimit: 3, retryAfterUntil: null, rate: 10, target: 10, slowed: null });
    expect(detailsMarkdown(m.stats(T0 + 1_000), 'running')).toContain(`the site's rate-limit headers say none of its 3 requests left: nothing sent until its quota resets at ${new Date(T0 + 40_000).toISOString()}`);
    m.onTokenRequest({ batchId: 'b1', unassigned: 17, grantsSeen: 1 });
    expect(m.planGrants(T0 + 39_000)).toEqual([]);
    expect(m.planGrants(T0 + 40_000).length).toBe(1);
    expect(m.stats(T0 + 40_000)).toMatchObject({ quotaUntil: null, quotaLimit: null, rate: 10 });
    // A lower cap on the Retry-After honoured caps this wait too: both are the site's word on when to come back.
    m.onReport({ batchId: 'b1', grantId: 2, outcomes: [ok], unused: 0, quotaHoldMs: 600_000 }, T0 + 41_000);
    expect(m.stats(T0 + 41_000)).toMatchObject({ quotaUntil: new Date(T0 + 641_000).toISOString(), quotaLimit: null });
    m.governor.setMaxRetryAfter(60_000, T0 + 42_000);
    expect(m.stats(T0 + 42_000)).toMatchObject({ quotaUntil: new Date(T0 + 102_000).toISOString() });
  });

  it('names a wait after the store failed as such, with what the store said', () => {
    const m = MonitorModel.fromInput({ source: 's', config: { rate: 10 }, work: [{ chunkId: 'c1', count: 500 }] }, T0);
    const [chunk] = m.takeChunksToStart();
    m.batchStarted('b1', chunk!);
    m.onReport({ batchId: 'b1', grantId: 1, outcomes: [], unused: 20, storeRetryMs: 60_000, storeError: 'AccessDenied: Access Denied' }, T0);
    expect(m.stats(T0 + 1_000)).toMatchObject({ storeRetryAt: new Date(T0 + 60_000).toISOString(), storeError: 'AccessDenied: Access Denied', retryAfterUntil: null, robotsRetryAt: null, rate: 10 });
    expect(m.stats(T0 + 60_000)).toMatchObject({ storeRetryAt: null, storeError: null });
  });

  it('names a wait for an unreadable robots.txt as such, without lowering the rate', () => {
    const m = MonitorModel.fromInput({ source: 's', config: { rate: 10 }, work: [{ chunkId: 'c1', count: 500 }] }, T0);
    const [chunk] = m.takeChunksToStart();
    m.batchStarted('b1', chunk!);
    const why = 'https://cdn.example: robots.txt unreachable (connect ECONNREFUSED) (try 1 of 3; its URLs fail after the last)';
    const events = m.onReport({ batchId: 'b1', grantId: 1, outcomes: [], unused: 20, robotsRetryMs: 300_000, robotsError: why }, T0);
    expect(m.stats(T0 + 1_000)).toMatchObject({ robotsRetryAt: new Date(T0 + 300_000).toISOString(), robotsError: why, retryAfterUntil: null, crawlDelayUntil: null, rate: 10, target: 10 });
    expect(m.stats(T0 + 300_000)).toMatchObject({ robotsRetryAt: null, robotsError: null });
    // The event (the monitor's alert and log line) says which host and why, too.
    expect(events.find((e) => e.event === 'robots-unavailable')?.detail).toContain(why);
  });

  it('shows one host of several waiting for its robots.txt without holding the source', () => {
    const m = MonitorModel.fromInput({ source: 's', config: { rate: 10 }, work: [{ chunkId: 'c1', count: 500 }] }, T0);
    const [chunk] = m.takeChunksToStart();
    m.batchStarted('b1', chunk!);
    const why = 'https://cdn.example: robots.txt answered 503 (try 2 of 3; its URLs fail after the last)';
    const events = m.onReport({ batchId: 'b1', grantId: 1, outcomes: [], unused: 0, robotsHostWait: { error: why, retryAtMs: T0 + 300_000 } }, T0);
    expect(events).toEqual([]);
    expect(m.stats(T0 + 1_000)).toMatchObject({ robotsHostWait: { error: why, until: new Date(T0 + 300_000).toISOString() }, robotsRetryAt: null, retryAfterUntil: null, rate: 10 });
    expect(m.stats(T0 + 300_000).robotsHostWait).toBeNull();
    // Once that host is all a grant had left, the source is held, and the hold says it instead.
    m.onReport({ batchId: 'b1', grantId: 2, outcomes: [], unused: 20, robotsHostWait: { error: why, retryAtMs: T0 + 300_000 } }, T0 + 2_000);
    m.onReport({ batchId: 'b1', grantId: 3, outcomes: [], unused: 20, robotsRetryMs: 290_000, robotsError: why }, T0 + 10_000);
    expect(m.stats(T0 + 11_000)).toMatchObject({ robotsHostWait: null, robotsRetryAt: new Date(T0 + 300_000).toISOString(), robotsError: why });
  });

  it('gives the windows of a source capped to a Crawl-delay to the batches holding it, short ones to the others, and lifts the cap when their hosts ask for less', () => {
    const m = MonitorModel.fromInput({ source: 's', config: { rate: 10 }, work: [{ chunkId: 'c1', count: 100 }, { chunkId: 'c2', count: 100 }] }, T0);
    for (const [k, chunk] of m.takeChunksToStart().entries()) m.batchStarted(`b${k + 1}`, chunk, false, T0);
    m.onTokenRequest({ batchId: 'b1', unassigned: 100, grantsSeen: 0 });
    m.onTokenRequest({ batchId: 'b2', unassigned: 100, grantsSeen: 0 });
    // b1's chunk is all on a host with Crawl-delay 1: its grant sent nothing and capped the source.
    m.onReport({ batchId: 'b1', grantId: 1, outcomes: [], unused: 10, crawlDelayMs: 1_000, tokens: { unassigned: 100, grantsSeen: 0 } }, T0);
    const holdersFirst = () => true;
    let now = T0 + 2_000;
    const held = m.planGrants(now, false, undefined, undefined, holdersFirst);
    expect(held.map((g) => g.batchId)).toEqual(['b1']);
    expect(held[0]!.intervalMs).toBeGreaterThanOrEqual(1_000);
    // b1's chunk ends: b2 gets a short window, whose report can lift the cap.
    m.onReport({ batchId: 'b1', grantId: held[0]!.grantId, outcomes: [], unused: 0, leastHostDelayMs: 1_000, finished: { chunkId: 'c1', urls: 100 } }, held[0]!.endMs);
    m.onBatchFinished({ batchId: 'b1', chunkId: 'c1', urls: 100 });
    now = held[0]!.endMs;
    const probe = m.planGrants(now, false, undefined, undefined, holdersFirst);
    expect(probe.map((g) => g.batchId)).toEqual(['b2']);
    expect(probe[0]!.endMs - probe[0]!.startMs).toBeLessThanOrEqual(3_000);
    expect(m.stats(now).siteMaxRate).toBe(1);
    m.onReport({ batchId: 'b2', grantId: probe[0]!.grantId, outcomes: [], unused: 0, leastHostDelayMs: 0 }, probe[0]!.endMs, { liftCrawlDelay: () => true });
    expect(m.stats(probe[0]!.endMs)).toMatchObject({ siteMaxRate: null, rate: 10, target: 10 });
  });

  it('shows one host of several going at its own Crawl-delay while the source keeps its rate, until the source itself is capped', () => {
    const m = MonitorModel.fromInput({ source: 's', config: { rate: 10 }, work: [{ chunkId: 'c1', count: 500 }] }, T0);
    const [chunk] = m.takeChunksToStart();
    m.batchStarted('b1', chunk!);
    expect(m.onReport({ batchId: 'b1', grantId: 1, outcomes: [], unused: 3, hostCrawlDelay: { origin: 'https://www.museum.example', delayMs: 5_000 } }, T0)).toEqual([]);
    expect(m.stats(T0 + 1_000)).toMatchObject({ hostCrawlDelay: { origin: 'https://www.museum.example', delayS: 5 }, siteMaxRate: null, crawlDelayUntil: null, rate: 10, target: 10 });
    expect(detailsMarkdown(m.stats(T0 + 1_000), 'running')).toContain('https://www.museum.example asks for 5 s between requests \\(robots.txt Crawl-delay\\): its URLs go one at a time that far apart');
    // Not once grants stop saying so (that host's URLs are done).
    expect(m.stats(T0 + 121_000).hostCrawlDelay).toBeNull();
    // Nor once a grant held nothing else and the whole source is capped: that says it.
    m.onReport({ batchId: 'b1', grantId: 2, outcomes: [], unused: 3, hostCrawlDelay: { origin: 'https://www.museum.example', delayMs: 5_000 } }, T0 + 130_000);
    m.onReport({ batchId: 'b1', grantId: 3, outcomes: [], unused: 20, crawlDelayMs: 5_000 }, T0 + 140_000);
    expect(m.stats(T0 + 141_000)).toMatchObject({ hostCrawlDelay: null, siteMaxRate: 0.2 });
  });
});
