import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { monitorSearchAttributes } from '../temporal/searchAttributes';
import type { MonitorStats } from '../workflows/monitorStats';
import { ChangedSources, crawlCommandFor, DoneRate, heldSourcesNote, listedStatus, recentEventsText, listMonitors, monitoringUpdate, NetworkDownNotice, parseStates, rowState, serverElsewhereNote, similarSources, SourceNotes, sourceStatus, statusTable, WorkersBehindNotice, type SourceStatus } from './status';

function running(done: number): SourceStatus {
  const counts = { done, linkrot: 0, robots: 0, content: 0, refused: 0, error: 0, retries: 0, requests: done };
  const stats = {
    source: 's', state: 'running', rate: 2, target: 2, counts, retryAfterUntil: null,
    urls: { total: 1_000, finished: done, queuedChunks: 0, inBatches: 1_000 },
    breaker: { windowRequests: 0, windowErrors: 0, consecutiveErrors: 0, last50: '' },
  } as unknown as MonitorStats;
  return { source: 's', workflowStatus: 'RUNNING', stats };
}

describe('images/s in monitoring_update', () => {
  it('reads the true rate when done counts arrive in steps, once per grant', () => {
    // 2 images/s, reported 20 at a time every 10 s, polled every second as crawl run does.
    const rate = new DoneRate();
    const readings: number[] = [];
    for (let t = 0; t <= 180_000; t += 1_000) {
      const update = monitoringUpdate([running(20 * Math.floor(t / 10_000))], rate.baseline(), t);
      if (t >= 60_000) readings.push(update.global.imagesPerS!);
      rate.record(t, update.global.done);
    }
    expect(Math.min(...readings)).toBeGreaterThanOrEqual(1.6);
    expect(Math.max(...readings)).toBeLessThanOrEqual(2.4);
  });

  it('measures from the oldest sample inside the window', () => {
    const rate = new DoneRate(10_000);
    expect(monitoringUpdate([running(0)], rate.baseline(), 0).global.imagesPerS).toBeNull();
    rate.record(0, 0);
    rate.record(5_000, 10);
    rate.record(12_000, 30);
    expect(rate.baseline()).toEqual({ atMs: 5_000, done: 10 });
    expect(monitoringUpdate([running(40)], rate.baseline(), 15_000).global.imagesPerS).toBe(3);
  });
});

describe('the status table', () => {
  it('calls a monitor an operator stopped "stopped" and a drained one "finished", as the Web UI does, not "completed"', () => {
    const halted = running(7);
    const stopped: SourceStatus = { ...halted, workflowStatus: 'COMPLETED', stats: { ...halted.stats!, state: 'stopped', haltReason: 'the last 50 requests all failed' } };
    const done: SourceStatus = { ...halted, source: 'fine', workflowStatus: 'COMPLETED', stats: { ...halted.stats!, state: 'running' } };
    const [, first, second] = statusTable([stopped, done]).split('\n');
    expect(first).toMatch(/^s\s+stopped\s.*7\/1000.*stopped by an operator \(was halted: the last 50 requests all failed\); 993 URL\(s\) not crawled: starting its manifest again crawls them$/);
    expect(second).toMatch(/^fine\s+finished\s/);
    expect(monitoringUpdate([done]).sources.fine!.state).toBe('finished');
    expect(monitoringUpdate([stopped]).sources.s!.state).toBe('stopped');
  });

  it('names a completed monitor\'s state in --json as the table does, also one whose result (an earlier build\'s) says running', async () => {
    const completed = (state: string) => {
      const handle = { result: async () => ({ ...running(30).stats!, state }) };
      const client = { workflow: { getHandle: () => handle } } as unknown as Client;
      const listed = { status: { name: 'COMPLETED' }, taskQueue: 'q', typedSearchAttributes: new TypedSearchAttributes() } as unknown as WorkflowExecutionInfo;
      return sourceStatus(client, 's', { listed });
    };
    expect((await completed('running')).stats!.state).toBe('finished');
    expect((await completed('finished')).stats!.state).toBe('finished');
    expect((await completed('stopped')).stats!.state).toBe('stopped');
  });

  it('shows a monitor not asked as its search attributes say, a stopped one as stopped', () => {
    const attrs = (state: string) => new TypedSearchAttributes(monitorSearchAttributes({ source: 'x', state, rate: 1.5, done: 12, errors: 3 }));
    const note = 'not asked within --within 30 s';
    const [, live, stopped] = statusTable([
      listedStatus('live', { status: { code: 1, name: 'RUNNING' }, typedSearchAttributes: attrs('paused') }, note),
      listedStatus('gone', { status: { code: 2, name: 'COMPLETED' }, typedSearchAttributes: attrs('stopped') }, note),
    ]).split('\n');
    expect(live).toMatch(/^live\s+paused \(last known\)\s+1\.5\s+12\s+3\s+not asked within --within 30 s$/);
    expect(stopped).toMatch(/^gone\s+stopped\s+1\.5\s+12\s+3\s+stopped by an operator$/);
  });

  it('says why a monitor failed or was terminated (a start input written by hand that it could not use)', () => {
    const failed: SourceStatus = { source: 'bad', workflowStatus: 'FAILED', stats: null, ended: 'invalid monitor input: "config" has unknown field "Rate"' };
    expect(statusTable([failed]).split('\n')[1]).toMatch(/^bad\s+failed\s+invalid monitor input: "config" has unknown field "Rate"$/);
    expect(monitoringUpdate([failed]).sources.bad).toMatchObject({ state: 'failed', note: 'invalid monitor input: "config" has unknown field "Rate"' });
  });

  it('says when a site\'s robots.txt Crawl-delay holds a source below its rate', () => {
    const r = running(3);
    const capped: SourceStatus = { ...r, stats: { ...r.stats!, rate: 0.5, target: 0.5, siteMaxRate: 0.5 } };
    expect(statusTable([capped]).split('\n')[1]).toMatch(/^s\s+running\s+0\.5\s.*robots\.txt Crawl-delay: at most 0\.5\/s$/);
    expect(statusTable([r]).split('\n')[1]).not.toMatch(/Crawl-delay/);
  });

  it('counts the tries that failed and go again, which a halted source has where it has no errors yet', () => {
    const fine = running(40);
    const h = running(0);
    // The demo's *broken*: every request failed, but the breaker halted it before any URL used its attempts.
    const broken: SourceStatus = { ...h, source: 'broken', stats: { ...h.stats!, state: 'halted', haltReason: 'the last 50 requests all failed', counts: { ...h.stats!.counts, retries: 51, requests: 51 } } };
    const [header, first, second] = statusTable([fine, broken]).split('\n');
    expect(header).toMatch(/\sERRORS\s+RETRIES\s+NOTE$/);
    expect(first).toMatch(/^s\s+running\s.*\s40\s+0\s+0\s+0\s+0\s*$/);
    expect(second).toMatch(/^broken\s+halted\s.*\s0\s+51\s+the last 50 requests all failed$/);
    // No failed try anywhere: no column.
    expect(statusTable([fine]).split('\n')[0]).not.toMatch(/RETRIES/);
    const update = monitoringUpdate([fine, broken]);
    expect(update.sources.broken).toMatchObject({ errors: 0, retries: 51 });
    expect(update.global).toMatchObject({ errors: 0, retries: 51 });
  });

  it('counts the URLs refused (a private address without --allow-network), in a column only when some were', () => {
    const fine = running(40);
    const r = running(0);
    const walled: SourceStatus = { ...r, source: 'intranet', workflowStatus: 'COMPLETED', stats: { ...r.stats!, counts: { ...r.stats!.counts, refused: 41 }, urls: { ...r.stats!.urls, total: 41, finished: 41 } } };
    const [header, first, second] = statusTable([fine, walled]).split('\n');
    expect(header).toMatch(/\sROBOTS\s+REFUSED\s+ERRORS\s/);
    expect(first).toMatch(/^s\s+running\s.*\s40\s+0\s+0\s+0\s+0\s+0\s*$/);
    expect(second).toMatch(/^intranet\s+finished\s.*41\/41\s+0\s+0\s+0\s+0\s+41\s+0\s*$/);
    expect(statusTable([fine]).split('\n')[0]).not.toMatch(/REFUSED/);
  });

  it('does not show a finished source waiting for the Retry-After its last report set', () => {
    const r = running(3);
    const waiting: SourceStatus = { ...r, stats: { ...r.stats!, retryAfterUntil: '2026-11-28T01:47:54.415Z' } };
    expect(statusTable([waiting]).split('\n')[1]).toMatch(/Retry-After until 2026-11-28T01:47:54.415Z$/);
    const ended: SourceStatus = { ...waiting, workflowStatus: 'COMPLETED' };
    expect(statusTable([ended]).split('\n')[1]).toMatch(/^s\s+finished\s[^A-Za-z]*$/);
    expect(monitoringUpdate([ended]).sources.s!.retryAfterUntil).toBeNull();
  });

  it('says why a running source is below its target and when it is back; a finished one is not explained', () => {
    const r = running(3);
    const slowed = { by: 'a 429 (Retry-After 30 s)', at: '2026-11-28T01:00:00.000Z', backAt: '2026-11-28T01:02:00.000Z' };
    const held: SourceStatus = { ...r, stats: { ...r.stats!, rate: 1, slowed } };
    expect(statusTable([{ ...held, stats: { ...held.stats!, rate: 1.23456 } }]).split('\n')[1]).toMatch(/^s\s+running\s+1\.23\s+2\s/);
    expect(statusTable([held]).split('\n')[1]).toMatch(/^s\s+running\s+1\s+2\s.*slowed by a 429 \(Retry-After 30 s\) at 2026-11-28T01:00:00.000Z: back at 2\/s by 2026-11-28T01:02:00.000Z unless slowed again$/);
    expect(monitoringUpdate([held]).sources.s!.slowed).toEqual(slowed);
    const ended: SourceStatus = { ...held, workflowStatus: 'COMPLETED' };
    expect(statusTable([ended]).split('\n')[1]).not.toMatch(/slowed/);
    expect(monitoringUpdate([ended]).sources.s!.slowed).toBeNull();
    // A monitor of an older build has no such field.
    expect(monitoringUpdate([r]).sources.s!.slowed).toBeNull();
  });

  it('says a paused source is the operator\'s doing, and when a temporary halt it was paused in ends', () => {
    const r = running(3);
    // The halt goes on when the operator resumes, so it is shown while paused.
    const paused = (coolingUntil: string | null): SourceStatus => ({ ...r, stats: { ...r.stats!, state: 'paused', coolingUntil } });
    expect(statusTable([paused('2026-11-23T12:01:00.000Z')]).split('\n')[1]).toMatch(/^s\s+paused\s.*paused by an operator; its temporary halt lasts until 2026-11-23T12:01:00\.000Z$/);
    expect(statusTable([paused(null)]).split('\n')[1]).toMatch(/paused by an operator$/);
  });

  it('shows the wait a Crawl-delay asks for as that, not as a Retry-After', () => {
    const r = running(3);
    const waiting: SourceStatus = { ...r, stats: { ...r.stats!, rate: 0.2, target: 0.2, siteMaxRate: 0.2, crawlDelayUntil: '2026-11-23T12:00:05.000Z' } };
    const row = statusTable([waiting]).split('\n')[1]!;
    expect(row).toMatch(/robots\.txt Crawl-delay: at most 0\.2\/s, next request not before 2026-11-23T12:00:05\.000Z$/);
    expect(row).not.toMatch(/Retry-After/);
    expect(monitoringUpdate([waiting]).sources.s).toMatchObject({ crawlDelayUntil: '2026-11-23T12:00:05.000Z', retryAfterUntil: null });
  });

  it('says when a site\'s spent quota holds a source, in the table and the JSON', () => {
    const r = running(3);
    const waiting: SourceStatus = { ...r, stats: { ...r.stats!, quotaUntil: '2026-11-23T12:00:40.000Z', quotaLimit: 100 } };
    const row = statusTable([waiting]).split('\n')[1]!;
    expect(row).toMatch(/the site's rate-limit headers say none of its 100 requests left: nothing sent until its quota resets at 2026-11-23T12:00:40\.000Z$/);
    expect(monitoringUpdate([waiting]).sources.s).toMatchObject({ quotaUntil: '2026-11-23T12:00:40.000Z', quotaLimit: 100, retryAfterUntil: null });
  });

  it('says when the quota a site said it spent paces a source below its rate, and times it at that pace', () => {
    const r = running(3);
    const paced: SourceStatus = { ...r, stats: { ...r.stats!, rate: 10, quotaPace: { limit: 100, everyS: 3_600 } } };
    const row = statusTable([paced]).split('\n')[1]!;
    expect(row).toMatch(/the site's quota \(its rate-limit headers\): 100 requests each 1h00m, about 0\.028\/s on average; the time left is at that pace$/);
    const update = monitoringUpdate([paced]).sources.s!;
    expect(update).toMatchObject({ quotaPace: { limit: 100, everyS: 3_600 } });
    expect(update.secondsLeft).toBeGreaterThan(3_600);
  });

  it('says when a failing store holds a source, with what the store said', () => {
    const r = running(3);
    const waiting: SourceStatus = { ...r, stats: { ...r.stats!, storeRetryAt: '2026-11-23T12:01:00.000Z', storeError: 'ENOSPC: no space left on device' } };
    const row = statusTable([waiting]).split('\n')[1]!;
    expect(row).toMatch(/store failing \(ENOSPC: no space left on device\): nothing sent until 2026-11-23T12:01:00\.000Z$/);
    expect(monitoringUpdate([waiting]).sources.s).toMatchObject({ storeRetryAt: '2026-11-23T12:01:00.000Z', storeError: 'ENOSPC: no space left on device', retryAfterUntil: null });
  });

  it('says when a batch ended without finishing its chunk and is being started again, in the table and once in run\'s notes', () => {
    const r = running(3);
    const lost = (n: number): SourceStatus => ({ ...r, stats: { ...r.stats!, batches: { active: 2, finished: 0, lost: n } } });
    expect(statusTable([lost(1)]).split('\n')[1]).toMatch(/a batch ended without finishing its chunk: started again within a minute/);
    expect(statusTable([lost(2)]).split('\n')[1]).toMatch(/2 batches ended without finishing their chunks/);
    expect(statusTable([lost(0)]).split('\n')[1]).not.toMatch(/ended without/);
    const notes = new SourceNotes();
    expect(notes.changed([lost(1)])).toEqual([{ source: 's', note: expect.stringMatching(/^a batch ended without finishing its chunk/) }]);
    expect(notes.changed([lost(1)])).toEqual([]);
  });

  it('says when a source has answered with nothing but content errors, in the table and once in run\'s notes', () => {
    const r = running(0);
    const only = (content: number, done = 0): SourceStatus => ({ ...r, stats: { ...r.stats!, counts: { ...r.stats!.counts, content, done } } });
    const note = /no image yet: its first 50\+ answers were all content errors .*`crawl reasons s` shows what came instead, `crawl pause s` stops asking$/;
    expect(statusTable([only(50)]).split('\n')[1]).toMatch(note);
    // Fewer, or a single image among them: nothing to say.
    expect(statusTable([only(49)]).split('\n')[1]).not.toMatch(/no image yet/);
    expect(statusTable([only(500, 1)]).split('\n')[1]).not.toMatch(/no image yet/);
    expect(statusTable([{ ...only(500), workflowStatus: 'COMPLETED' }]).split('\n')[1]).not.toMatch(/no image yet/);
    // Pages that halted the source, resumed past: the halt said what they were.
    const pages = (content: number, n: number): SourceStatus => ({ ...only(content), stats: { ...only(content).stats!, pages: n } });
    expect(statusTable([pages(50, 50)]).split('\n')[1]).not.toMatch(/no image yet/);
    expect(statusTable([pages(99, 50)]).split('\n')[1]).not.toMatch(/no image yet/);
    expect(statusTable([pages(100, 50)]).split('\n')[1]).toMatch(note);
    // An earlier crawl's records of a chunk taken up after a stop: not this monitor's answers.
    const before = (content: number, n: number): SourceStatus => ({ ...only(content), stats: { ...only(content).stats!, contentBefore: n } });
    expect(statusTable([before(60, 50)]).split('\n')[1]).not.toMatch(/no image yet/);
    expect(statusTable([before(100, 50)]).split('\n')[1]).toMatch(note);
    const notes = new SourceNotes();
    expect(notes.changed([only(49)])).toEqual([]);
    expect(notes.changed([only(50)])).toEqual([{ source: 's', note: expect.stringMatching(note) }]);
    expect(notes.changed([only(120)])).toEqual([]); // told once, not at every count
    expect(notes.changed([only(120, 1)])).toEqual([]);
    // crawl run's notes name its store, and its server when commands would not find it.
    const ownPorts = new SourceNotes(crawlCommandFor('127.0.0.1:40123', "/tmp/my crawl's out", undefined));
    expect(ownPorts.changed([only(50)])[0]!.note).toMatch(/`crawl reasons s --data-dir '\/tmp\/my crawl'\\''s out'` shows what came instead, `TEMPORAL_ADDRESS=127\.0\.0\.1:40123 crawl pause s` stops asking$/);
    const usual = new SourceNotes(crawlCommandFor('127.0.0.1:7233', '/data/out', undefined));
    expect(usual.changed([only(50)])[0]!.note).toMatch(/`crawl reasons s --data-dir \/data\/out` shows what came instead, `crawl pause s` stops asking$/);
    expect(crawlCommandFor('10.1.2.3:7233', '/o', '10.1.2.3:7233')('pause s')).toBe('crawl pause s');
    // Said once at the start too, so that `crawl status` in another terminal finds this crawl.
    expect(serverElsewhereNote('127.0.0.1:40123', crawlCommandFor('127.0.0.1:40123', '/o', undefined))).toBe('this crawl\'s server is at 127.0.0.1:40123: `TEMPORAL_ADDRESS=127.0.0.1:40123 crawl status` (and pause, resume, ...) in another terminal');
    expect(serverElsewhereNote('127.0.0.1:7233', crawlCommandFor('127.0.0.1:7233', '/o', undefined))).toBeUndefined();
  });

  it('says when the latest 50+ images were one and the same file (a placeholder), running or finished, and once in run\'s notes', () => {
    const r = running(300);
    const same = (run: number, workflowStatus = 'RUNNING'): SourceStatus => ({ ...r, workflowStatus, stats: { ...r.stats!, sameImage: { sha: '6450ba3e', run } } });
    const note = 'one image for every URL: its last 50+ images were the same file (sha256 6450ba3e...), a placeholder served instead of the images ' +
      '(hotlink protection, a block, or images gone)? Their records show it';
    const row = (st: SourceStatus) => statusTable([st]).split('\n')[1]!;
    expect(row(same(50)).endsWith(`${note}; \`crawl pause s\` stops asking`)).toBe(true);
    expect(row(same(49))).not.toMatch(/one image for every URL/);
    // Finished: its records look like images, so the table says it without a command.
    expect(row(same(400, 'COMPLETED')).endsWith(note)).toBe(true);
    const notes = new SourceNotes();
    expect(notes.changed([same(49)])).toEqual([]);
    expect(notes.changed([same(50)])).toEqual([{ source: 's', note: `${note}; \`crawl pause s\` stops asking` }]);
    expect(notes.changed([same(80)])).toEqual([]); // told once while the run lasts
    // monitoring_update (crawl status --watch, crawl run off a terminal) carries it too.
    expect(monitoringUpdate([same(50)]).sources.s!.note).toBe(`${note}; \`crawl pause s\` stops asking`);
    expect(monitoringUpdate([same(400, 'COMPLETED')]).sources.s!.note).toBe(note);
    expect(monitoringUpdate([same(49)]).sources.s!.note).toBeUndefined();
  });

  it('gives a halted source\'s reason in monitoring_update', () => {
    const r = running(60);
    const reason = 'its last 50 answers were web pages (HTML, JSON or text), not images, after 60 images: likely a block or login page served with 200';
    const halted: SourceStatus = { ...r, stats: { ...r.stats!, state: 'halted', haltReason: reason } };
    expect(monitoringUpdate([halted]).sources.s).toMatchObject({ state: 'halted', haltReason: reason });
    expect(monitoringUpdate([r]).sources.s!.haltReason).toBeNull();
  });

  it('says when an unreadable robots.txt holds a source, and when it is asked again', () => {
    const r = running(3);
    const waiting: SourceStatus = { ...r, stats: { ...r.stats!, robotsRetryAt: '2026-11-23T12:05:00.000Z' } };
    const row = statusTable([waiting]).split('\n')[1]!;
    expect(row).toMatch(/robots\.txt unavailable: asked again at 2026-11-23T12:05:00\.000Z$/);
    expect(row).not.toMatch(/Retry-After/);
    expect(monitoringUpdate([waiting]).sources.s).toMatchObject({ robotsRetryAt: '2026-11-23T12:05:00.000Z', retryAfterUntil: null });
  });

  it('says which host\'s robots.txt cannot be read and why, and counts the source as waiting', () => {
    const r = running(0);
    const why = 'http://127.0.0.2:8080: robots.txt unreachable (connect ECONNREFUSED 127.0.0.2:8080) (try 2 of 3; its URLs fail after the last)';
    const waiting: SourceStatus = { ...r, source: 'w', stats: { ...r.stats!, robotsRetryAt: '2026-11-23T12:05:00.000Z', robotsError: why } };
    expect(statusTable([waiting]).split('\n')[1]).toContain(`robots.txt unavailable (${why}): asked again at 2026-11-23T12:05:00.000Z`);
    const update = monitoringUpdate([waiting, r]);
    expect(update.sources.w).toMatchObject({ robotsError: why });
    expect(update.global).toMatchObject({ running: 2, waiting: 1, halted: 0 });
    expect(monitoringUpdate([r]).global.waiting).toBe(0);
    // A held source sends nothing: the global rate is the sending sources' only.
    expect(update.global.ratePerS).toBe(r.stats!.rate);
  });

  it('counts paused sources, and leaves what they would send out of the global rate', () => {
    const r = running(0);
    const paused: SourceStatus = { ...r, source: 'p', stats: { ...r.stats!, state: 'paused', rate: 7 } };
    const cooling: SourceStatus = { ...r, source: 'c', stats: { ...r.stats!, state: 'cooling', rate: 5, coolingUntil: '2026-11-23T12:01:00.000Z' } };
    const update = monitoringUpdate([paused, cooling, r]);
    expect(update.global).toMatchObject({ running: 3, paused: 1, waiting: 1, ratePerS: r.stats!.rate });
    expect(monitoringUpdate([paused]).global).toMatchObject({ paused: 1, ratePerS: 0 });
  });
});

describe('crawl start adding work to sources that wait for an operator', () => {
  const monitors = (states: Record<string, string>) => new Map(Object.entries(states).map(([source, state]) =>
    [source, { typedSearchAttributes: new TypedSearchAttributes(monitorSearchAttributes({ source, state, rate: 1, done: 0, errors: 0 })) }]));

  it('names the paused and halted ones and how to resume them', () => {
    const m = monitors({ museum: 'halted', photos: 'running', archive: 'paused', other: 'halted' });
    expect(heldSourcesNote(m, ['museum', 'photos'])).toBe('a source given work is paused or halted: museum (halted); the URLs added wait until `crawl resume museum` (`crawl status` says why each waits)');
    expect(heldSourcesNote(m, ['museum', 'photos', 'archive', 'new'])).toBe('2 sources given work are paused or halted: museum (halted), archive (paused); the URLs added wait until `crawl resume SOURCE...` (or --all) (`crawl status` says why each waits)');
    expect(heldSourcesNote(m, ['photos', 'new'])).toBeUndefined();
    expect(heldSourcesNote(monitors(Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`s${i}`, 'paused']))), Array.from({ length: 7 }, (_, i) => `s${i}`)))
      .toMatch(/^7 sources given work are paused or halted: s0 \(paused\), s1 \(paused\), s2 \(paused\), s3 \(paused\), s4 \(paused\) and 2 more;/);
  });
});

describe('crawl status --state', () => {
  const listed = (state: string, status = 'RUNNING') => listedStatus('s', {
    status: { name: status } as WorkflowExecutionInfo['status'],
    typedSearchAttributes: new TypedSearchAttributes(monitorSearchAttributes({ source: 's', state, rate: 1, done: 0, errors: 0 })),
  }, 'not asked');

  it('matches a row by the state the table shows, last known or answered', () => {
    expect(rowState(listed('halted'))).toBe('halted');
    expect(rowState(listed('cooling'))).toBe('cooling');
    expect(rowState(running(3))).toBe('running');
    // Completed: finished, unless an operator stopped it; other ends by how the run ended.
    expect(rowState(listed('running', 'COMPLETED'))).toBe('finished');
    expect(rowState(listed('stopped', 'COMPLETED'))).toBe('stopped');
    expect(rowState(listed('running', 'TERMINATED'))).toBe('terminated');
    expect(rowState(listed('running', 'TIMED_OUT'))).toBe('timed_out');
  });

  it('takes states comma-separated in any case, and names the states when one is not one', () => {
    expect([...parseStates('Halted, paused')]).toEqual(['halted', 'paused']);
    expect(() => parseStates('halted,stuck')).toThrow('unknown state "stuck": give one or more of running, paused, cooling, halted, stopped, finished, failed, terminated, timed_out, canceled, comma-separated');
    expect(() => parseStates(' , ')).toThrow(/^no state given: give one or more of running/);
  });
});

describe('crawl status with sources named', () => {
  it('gives each one\'s recent events below the table, and nothing for a source without any', () => {
    const museum: SourceStatus = { ...running(3), source: 'museum', stats: { ...running(3).stats!, alerts: ['2026-11-29T22:03:49.654Z catalogue-entry: changed to rate 2: target 2.00/s, burst 0 (was 5.00/s)', '2026-11-29T22:05:00.000Z throttled: 429'] } };
    const quiet: SourceStatus = { ...running(3), source: 'quiet', stats: { ...running(3).stats!, alerts: [] } };
    expect(recentEventsText([museum, quiet])).toBe([
      'museum: recent events',
      '  2026-11-29T22:03:49.654Z catalogue-entry: changed to rate 2: target 2.00/s, burst 0 (was 5.00/s)',
      '  2026-11-29T22:05:00.000Z throttled: 429',
    ].join('\n'));
    expect(recentEventsText([quiet, { ...quiet, stats: null }])).toBeUndefined();
  });
});

describe('the time a crawl still takes', () => {
  it('shows each running source\'s time left at its pace, and the crawl\'s as its slowest running source', () => {
    // 1,000 URLs at 2/s: 0 finished, 500 s; 880 finished, 60 s; a paused one waits for an operator.
    const fresh = { ...running(0), source: 'fresh' };
    const late = { ...running(880), source: 'late' };
    const paused: SourceStatus = { ...running(0), source: 'paused', stats: { ...running(0).stats!, state: 'paused' } };
    const finished: SourceStatus = { ...running(1_000), source: 'finished', workflowStatus: 'COMPLETED' };
    const update = monitoringUpdate([fresh, late, paused, finished], undefined, 0);
    expect(Object.fromEntries(Object.entries(update.sources).map(([k, v]) => [k, v.secondsLeft]))).toEqual({ fresh: 500, late: 60, paused: null, finished: null });
    expect(update.global.secondsLeft).toBe(500);
    const rows = statusTable([fresh, late, paused, finished], 0).split('\n');
    expect(rows[0]).toMatch(/FINISHED\s+LEFT\s+DONE/);
    expect(rows[1]).toMatch(/^fresh\s+running\s+2\s+2\s+0\/1000\s+~9m\s+0\s/);
    expect(rows[2]).toMatch(/^late\s+running\s+2\s+2\s+880\/1000\s+~1m\s+880\s/);
    expect(rows[3]).toMatch(/^paused\s+paused\s+2\s+2\s+0\/1000\s+0\s/);
    expect(rows[4]).toMatch(/^finished\s+finished\s+2\s+2\s+1000\/1000\s+1000\s/);
    // Nothing left anywhere: no column for it.
    expect(statusTable([finished], 0).split('\n')[0]).toMatch(/FINISHED\s+DONE/);
  });
});

describe('sources the workers cannot keep up with', () => {
  const missing = (missRate: number, over: Partial<MonitorStats> = {}): SourceStatus => {
    const r = running(10);
    return { ...r, stats: { ...r.stats!, rate: 10, tokens: { granted: 100, unused: 0, missed: 40, missRate, wanted: 0, nextWindowAt: null, leadMs: 300 }, ...over } };
  };

  it('says so in the table and counts them in monitoring_update, from 30% of recent slots missed', () => {
    expect(statusTable([missing(0.45)]).split('\n')[1]).toMatch(/workers behind: 45% of its recent slots passed unsent, so it gets about 5\.5\/s of its 10\/s .*add workers \(crawl worker\), or lower rates$/);
    expect(statusTable([missing(0.29)]).split('\n')[1]).not.toMatch(/workers behind/);
    const update = monitoringUpdate([missing(0.45), { ...missing(0.1), source: 'ok' }]);
    expect(update.global.workersBehind).toBe(1);
    expect([update.sources.s!.workersBehind, update.sources.ok!.workersBehind]).toEqual([true, false]);
  });

  it('names a site too slow for its rate instead, in the table, monitoring_update and once in crawl run\'s notes', () => {
    const slow = missing(0.4, { rate: 30, connectionWaits: { share: 0.5, perSite: 64 }, latency: { baselineMs: 3_000, recentMedianMs: 3_000 } });
    expect(statusTable([slow]).split('\n')[1]).toMatch(/site answers slowly: 50% of its recent requests waited for a connection, every one of the worker's 64 connections to it waiting for an answer \(median time to first byte 3 s\), so it gets at most about 21\.3\/s of its 30\/s: lower its rate \(crawl set-rate\), or, if the site can bear more requests at once, raise CRAWL_MAX_CONNECTIONS_PER_SITE$/);
    // 64 connections bear 21.3/s at 3 s an answer, more than 10/s: the figure would say nothing.
    expect(statusTable([missing(0.4, { connectionWaits: { share: 0.5, perSite: 64 }, latency: { baselineMs: 3_000, recentMedianMs: 3_000 } })]).split('\n')[1]).toMatch(/\), so it gets less than its 10\/s: lower its rate/);
    expect(statusTable([slow]).split('\n')[1]).not.toMatch(/workers behind/);
    const update = monitoringUpdate([slow, { ...missing(0.45), source: 'busy' }]);
    expect(update.global).toMatchObject({ workersBehind: 1, connectionsFull: 1 });
    expect([update.sources.s!.connectionsFull, update.sources.s!.workersBehind, update.sources.busy!.connectionsFull]).toEqual([true, false, false]);
    const notes = new SourceNotes();
    expect(notes.changed([slow]).map((n) => n.note)).toEqual([expect.stringMatching(/^site answers slowly: 50%/)]);
    // Told once: its share wavers about the threshold from report to report.
    expect(notes.changed([missing(0.4, { connectionWaits: { share: 0.1, perSite: 64 } })])).toEqual([]);
    expect(notes.changed([missing(0.4, { connectionWaits: { share: 0.3, perSite: 64 } })])).toEqual([]);
  });

  it('tells crawl run of a new reason its site\'s connections are full, also beside a note of another kind', () => {
    const waits = (w: Partial<NonNullable<MonitorStats['connectionWaits']>>) => missing(0.4, { connectionWaits: { share: 0.5, perSite: 8, learnt: true, ...w } });
    const notes = new SourceNotes();
    expect(notes.changed([waits({ starting: true })]).map((n) => n.note)).toEqual([expect.stringMatching(/^site answers slowly: its images are large/)]);
    expect(notes.changed([waits({ starting: true, share: 0.4 })])).toEqual([]);
    expect(notes.changed([waits({ perSite: 4, refused: true })]).map((n) => n.note)).toEqual([expect.stringMatching(/^site refuses requests beyond 4 open at once/)]);
    expect(notes.changed([waits({ perSite: 4, refused: true, share: 0.6 })])).toEqual([]);
    // The placeholder note came first in run's lines and the refusal was never told.
    const placeholder = (w: SourceStatus) => ({ ...w, stats: { ...w.stats!, sameImage: { sha: '6450ba3e', run: 60 } } });
    const other = new SourceNotes();
    expect(other.changed([placeholder(waits({ perSite: 4, refused: true }))]).map((n) => n.note))
      .toEqual([expect.stringMatching(/^one image for every URL/), expect.stringMatching(/^site refuses requests beyond 4/)]);
  });

  it('names the worker\'s network instead when grants said it was down, and does not count the source as behind', () => {
    const down = missing(0.95, { networkDownAt: '2026-11-29T07:14:00.000Z' });
    expect(statusTable([down]).split('\n')[1]).toMatch(/worker's network down: no site answered and connections found no route \(last at 2026-11-29T07:14:00\.000Z\); its slots pass unsent and nothing counts against the site/);
    expect(statusTable([down]).split('\n')[1]).not.toMatch(/workers behind/);
    expect(monitoringUpdate([down]).global).toMatchObject({ workersBehind: 0, networkDown: 1 });
    expect(monitoringUpdate([down]).sources.s!.networkDownAt).toBe('2026-11-29T07:14:00.000Z');
    expect(monitoringUpdate([missing(0.95)]).global.networkDown).toBe(0);
  });

  it('gives crawl run one line when the worker\'s network goes down and one when it is back, not one per source or poll', () => {
    const notice = new NetworkDownNotice();
    const down = (n: number) => monitoringUpdate(Array.from({ length: 4 }, (_, i) => ({ ...missing(0.9, i < n ? { networkDownAt: '2026-11-29T07:14:00.000Z' } : {}), source: `s${i}` })));
    expect(notice.next(down(0))).toBeUndefined();
    expect(notice.next(down(3))).toMatch(/^worker's network down: 3 of 4 running source\(s\) had requests that found no route/);
    expect(notice.next(down(4))).toBeUndefined();
    expect(notice.next(down(0))).toBe('worker\'s network back: sources are sending again');
    expect(notice.next(down(0))).toBeUndefined();
  });

  it('does not blame the workers for a source that is held, paused or finished, or from an older monitor', () => {
    const held = missing(0.8, { retryAfterUntil: '2026-11-27T12:00:00.000Z' });
    expect(statusTable([held]).split('\n')[1]).toMatch(/Retry-After until/);
    const paused = missing(0.8, { state: 'paused' });
    const finished: SourceStatus = { ...missing(0.8), workflowStatus: 'COMPLETED' };
    const older = missing(0.8);
    delete older.stats!.tokens.missRate;
    for (const s of [held, paused, finished, older]) {
      expect(statusTable([s]).split('\n')[1]).not.toMatch(/workers behind/);
      expect(monitoringUpdate([s]).global.workersBehind).toBe(0);
    }
  });

  it('gives crawl run one line for all of them, again every 5 minutes while it lasts, or after 30 s when they have doubled', () => {
    const notice = new WorkersBehindNotice();
    const update = (behind: number) => monitoringUpdate([...Array.from({ length: behind }, (_, i) => ({ ...missing(0.5), source: `b${i}` })), { ...missing(0), source: 'ok' }]);
    expect(notice.next(update(0), 0)).toBeUndefined();
    expect(notice.next(update(2), 1_000)).toMatch(/^workers behind: 2 of 3 running source\(s\) had 30% or more of their recent slots pass unsent/);
    expect(notice.next(update(4), 30_000)).toBeUndefined(); // doubled, but too soon
    expect(notice.next(update(3), 31_000)).toBeUndefined(); // not doubled
    expect(notice.next(update(4), 31_000)).toMatch(/^workers behind: 4 of 5 /);
    expect(notice.next(update(7), 61_000)).toBeUndefined();
    expect(notice.next(update(7), 31_000 + 300_000)).toMatch(/^workers behind: 7 of 8 /);
  });

  it('leaves it to crawl status when fewer than 5% of the running sources are behind', () => {
    const update = (behind: number, ok: number) => monitoringUpdate([
      ...Array.from({ length: behind }, (_, i) => ({ ...missing(0.3), source: `b${i}` })),
      ...Array.from({ length: ok }, (_, i) => ({ ...missing(0), source: `ok${i}` })),
    ]);
    expect(new WorkersBehindNotice().next(update(2, 40), 0)).toBeUndefined();
    expect(new WorkersBehindNotice().next(update(3, 40), 0)).toMatch(/^workers behind: 3 of 43 /);
  });
});

describe('notes while crawl run shows its bar', () => {
  it('tells each new reason a source waits or halts once, and again when it changes', () => {
    const notes = new SourceNotes();
    const r = running(0);
    const held = (at: string): SourceStatus => ({ ...r, stats: { ...r.stats!, robotsRetryAt: at, robotsError: 'http://h: robots.txt answered 503' } });
    expect(notes.changed([r])).toEqual([]);
    expect(notes.changed([held('2026-11-23T12:05:00.000Z')])).toEqual([{ source: 's', note: 'robots.txt unavailable (http://h: robots.txt answered 503): asked again at 2026-11-23T12:05:00.000Z' }]);
    expect(notes.changed([held('2026-11-23T12:05:00.000Z')])).toEqual([]);
    expect(notes.changed([held('2026-11-23T12:10:00.000Z')])).toHaveLength(1);
    const halted: SourceStatus = { ...r, stats: { ...r.stats!, state: 'halted', haltReason: '5 errors in a row' } };
    expect(notes.changed([halted])).toEqual([{ source: 's', note: 'HALTED: 5 errors in a row' }]);
    expect(notes.changed([halted])).toEqual([]);
    // One host of several waiting is told too, though the source is not held.
    const hostWait = { error: 'http://cdn: robots.txt answered 503 (try 1 of 3; its URLs fail after the last)', until: '2026-11-23T12:05:00.000Z' };
    const oneHost: SourceStatus = { ...r, stats: { ...r.stats!, robotsHostWait: hostWait } };
    expect(notes.changed([oneHost])).toEqual([{ source: 's', note: `one host's robots.txt unavailable (${hostWait.error}): its URLs wait until ${hostWait.until}, the other hosts go on` }]);
    expect(statusTable([oneHost]).split('\n')[1]).toMatch(/one host's robots.txt unavailable \(http:\/\/cdn: .*\): its URLs wait until 2026-11-23T12:05:00.000Z, the other hosts go on$/);
    expect(monitoringUpdate([oneHost])).toMatchObject({ global: { waiting: 0 }, sources: { s: { robotsHostWait: hostWait, robotsRetryAt: null } } });
    // So is one host of several going at its own Crawl-delay.
    const paced: SourceStatus = { ...r, stats: { ...r.stats!, hostCrawlDelay: { origin: 'http://www.h', delayS: 5 } } };
    expect(notes.changed([paced])).toEqual([{ source: 's', note: 'http://www.h asks for 5 s between requests (robots.txt Crawl-delay): its URLs go one at a time that far apart, the source\'s other hosts at its rate' }]);
    expect(monitoringUpdate([paced])).toMatchObject({ global: { waiting: 0 }, sources: { s: { hostCrawlDelay: { origin: 'http://www.h', delayS: 5 }, crawlDelayUntil: null } } });
    // A completed monitor says nothing more; a paused one is the operator's doing.
    expect(notes.changed([{ ...halted, workflowStatus: 'COMPLETED' }])).toEqual([]);
    expect(notes.changed([{ ...r, stats: { ...r.stats!, state: 'paused', retryAfterUntil: '2026-11-23T12:05:00.000Z' } }])).toEqual([]);
  });
});

describe('crawl run\'s monitoring_update lines in a log', () => {
  it('carry every source in the first line, then only those whose entry changed, counting the rest', () => {
    const named = (source: string, done: number): SourceStatus => ({ ...running(done), source });
    const lines = new ChangedSources();
    const first = lines.line(monitoringUpdate([named('a', 1), named('b', 1), named('c', 1)]));
    expect(Object.keys(first.sources)).toEqual(['a', 'b', 'c']);
    expect(first.unchangedSources).toBe(0);
    const second = lines.line(monitoringUpdate([named('a', 1), named('b', 4), named('c', 1)]));
    expect(second.sources).toEqual({ b: expect.objectContaining({ done: 4 }) });
    expect(second.unchangedSources).toBe(2);
    // The global figures are whole in every line.
    expect(second.global).toMatchObject({ sources: 3, done: 6 });
    const third = lines.line(monitoringUpdate([named('a', 1), named('b', 4), named('c', 2)]));
    expect(Object.keys(third.sources)).toEqual(['c']);
  });
});

describe('the listing of monitors', () => {
  it('gives each source its current run: the one that did not continue as new, else the latest', async () => {
    const row = (id: string, name: string, startMs: number) => ({ workflowId: `crawl-monitor:${id}`, status: { name }, startTime: new Date(startMs) }) as WorkflowExecutionInfo;
    const rows = [
      row('a', 'RUNNING', 3), row('a', 'CONTINUED_AS_NEW', 1), row('a', 'CONTINUED_AS_NEW', 2),
      row('b', 'CONTINUED_AS_NEW', 5), row('b', 'COMPLETED', 6),
      // Its successor not listed yet: the source is still there.
      row('c', 'CONTINUED_AS_NEW', 1), row('c', 'CONTINUED_AS_NEW', 4),
      // Started again after it completed: the later run.
      row('d', 'COMPLETED', 1), row('d', 'RUNNING', 9),
    ];
    const client = { workflow: { list: async function* () { yield* rows; } } } as unknown as Client;
    const listed = await listMonitors(client);
    expect(Object.fromEntries([...listed].map(([s, wf]) => [s, `${wf.status.name}@${wf.startTime.getTime()}`]))).toEqual({
      a: 'RUNNING@3', b: 'COMPLETED@6', c: 'CONTINUED_AS_NEW@4', d: 'RUNNING@9',
    });
  });
});

describe('a source named as it is not known', () => {
  const known = ['127.0.0.1:18095', 'a.example', 'museum', 'photos.example:8443', 'www.b.example'];

  it('suggests the same host with its port, without www., in another case, or a name holding the one given', () => {
    expect(similarSources('127.0.0.1', known)).toEqual(['127.0.0.1:18095']);
    expect(similarSources('www.a.example', known)).toEqual(['a.example']);
    expect(similarSources('B.example', known)).toEqual(['www.b.example']);
    expect(similarSources('photos.example', known)).toEqual(['photos.example:8443']);
    expect(similarSources('Museum', known)).toEqual(['museum']);
    // A host in Unicode: its source is named in the form URLs carry (punycode).
    expect(similarSources('Bücher.example', [...known, 'xn--bcher-kva.example'])).toEqual(['xn--bcher-kva.example']);
  });

  it('suggests nothing unrelated, nothing from one or two characters, and at most three', () => {
    expect(similarSources('c.example', known)).toEqual([]);
    expect(similarSources('a.', known)).toEqual([]);
    expect(similarSources('host', ['host1', 'host2', 'host3', 'host4'])).toEqual(['host1', 'host2', 'host3']);
  });
});
