import type { SourceStatus } from './status';
import { StatusPoller } from './statusPoller';

describe('StatusPoller', () => {
  it('asks every source once, then at most perPoll running ones in turn, and never a finished one again', async () => {
    const sources = Array.from({ length: 10 }, (_, i) => `s${i}`);
    const finished = new Set(['s0', 's1']);
    const asked: string[] = [];
    const poller = new StatusPoller(sources, async (source) => {
      asked.push(source);
      return { source, workflowStatus: finished.has(source) ? 'COMPLETED' : 'RUNNING', stats: null } as SourceStatus;
    }, { perPoll: 3 });
    expect((await poller.poll()).map((s) => s.source)).toEqual(sources);
    expect(asked.sort()).toEqual([...sources].sort());
    // Eight running: three per poll, in turn, so each is asked again within three polls.
    const rounds: string[][] = [];
    for (let i = 0; i < 3; i++) {
      asked.length = 0;
      await poller.poll();
      rounds.push([...asked]);
    }
    expect(rounds.every((r) => r.length === 3)).toBe(true);
    expect(new Set(rounds.flat())).toEqual(new Set(sources.slice(2)));
    // A source seen finishing drops out of the turns.
    finished.add('s2');
    for (let i = 0; i < 3; i++) await poller.poll();
    asked.length = 0;
    for (let i = 0; i < 4; i++) await poller.poll();
    expect(asked).not.toContain('s2');
    expect(asked).not.toContain('s0');
    expect(poller.statuses().find((s) => s.source === 's2')!.workflowStatus).toBe('COMPLETED');
  });

  it('counts a source that has not answered yet as holding the URLs it was given, not none', async () => {
    let answer = false;
    const stats = { urls: { finished: 1, total: 3 } } as unknown as NonNullable<SourceStatus['stats']>;
    const poller = new StatusPoller(['s0', 's1'], async (source) => (answer || source === 's1'
      ? { source, workflowStatus: 'RUNNING', stats }
      // As statusOf falls back to the search attributes: state and counts, no URL total.
      : { source, workflowStatus: 'RUNNING', stats: null, unanswered: { note: 'no worker answered within 10 s', state: 'running', done: 0 } }), { expectedUrls: () => 3 });
    const first = await poller.poll();
    expect(first[0]).toMatchObject({ stats: null, unanswered: { note: 'no worker answered within 10 s', state: 'running', total: 3 } });
    answer = true;
    expect((await poller.poll())[0]).toMatchObject({ stats: { urls: { total: 3 } } });
  });

  it('keeps the counts a running source last answered with when a later query goes unanswered', async () => {
    const stats = { urls: { finished: 2, total: 3 } } as unknown as NonNullable<SourceStatus['stats']>;
    let answer = true;
    const poller = new StatusPoller(['s0'], async (source) => (answer
      ? { source, workflowStatus: 'RUNNING', stats }
      : { source, workflowStatus: 'RUNNING', stats: null, unanswered: { note: 'no worker answered within 10 s' } }));
    await poller.poll();
    answer = false;
    const [s] = await poller.poll();
    expect(s).toMatchObject({ stats: { urls: { finished: 2, total: 3 } }, unanswered: { note: 'no worker answered within 10 s' } });
    answer = true;
    expect((await poller.poll())[0]!.unanswered).toBeUndefined();
  });

  it('asks within askWithinMs, running monitors first, leaving the rest as the listing showed them', async () => {
    // 40 sources, every fourth listed as closed; each answer moves the clock on by 250 ms.
    const sources = Array.from({ length: 40 }, (_, i) => `s${String(i).padStart(2, '0')}`);
    const listedClosed = (s: string) => Number(s.slice(1)) % 4 === 0;
    const listed = (s: string): SourceStatus => ({
      source: s, workflowStatus: listedClosed(s) ? 'COMPLETED' : 'RUNNING', stats: null, unanswered: { note: 'not asked within --within 3 s', state: 'running', done: 4 },
    });
    let nowMs = 0;
    const asked: string[] = [];
    const poller = new StatusPoller(sources, async (source) => {
      asked.push(source);
      await Promise.resolve();
      nowMs += 250;
      return { source, workflowStatus: listedClosed(source) ? 'COMPLETED' : 'RUNNING', stats: { state: 'running', counts: { done: 9 } } as unknown as NonNullable<SourceStatus['stats']> };
    }, { askWithinMs: 3000, placeholder: listed, now: () => nowMs });
    const statuses = await poller.poll();
    // 16 at a time: the first 16 begin at once, and by the time they have answered (4 s) the time is up.
    expect(asked.length).toBe(16);
    expect(asked.every((s) => !listedClosed(s))).toBe(true);
    expect(poller.notAsked).toBe(40 - asked.length);
    expect(statuses.map((s) => s.source)).toEqual(sources);
    for (const s of statuses) {
      if (asked.includes(s.source)) expect(s).toMatchObject({ stats: { counts: { done: 9 } } });
      else expect(s).toEqual(listed(s.source));
    }
    // Without a limit, every one is asked: running first, then the closed.
    const all: string[] = [];
    await new StatusPoller(sources, async (source) => {
      all.push(source);
      return listed(source);
    }, { placeholder: listed }).poll();
    expect(all.slice(0, 30).every((s) => !listedClosed(s))).toBe(true);
    expect(all.slice(30).every(listedClosed)).toBe(true);
  });

  describe('with a listing of the monitors that closed', () => {
    const statsOf = (done: number, state = 'running') => ({ state, counts: { done, error: 0 }, urls: { finished: 0, total: 1 } }) as unknown as NonNullable<SourceStatus['stats']>;
    function setUp(n: number) {
      const sources = Array.from({ length: n }, (_, i) => `s${i}`);
      const answers = new Map(sources.map((s) => [s, { source: s, workflowStatus: 'RUNNING', stats: statsOf(0) } as SourceStatus]));
      const closedAt = new Map<string, number>();
      const asked: string[] = [];
      const since: number[] = [];
      let nowMs = 1_000_000;
      const poller = new StatusPoller(sources, async (source) => {
        asked.push(source);
        return answers.get(source)!;
      }, {
        perPoll: 2, firstAsksPerPoll: 5, expectedUrls: () => 7, now: () => nowMs,
        closedSince: async (sinceMs) => {
          since.push(sinceMs);
          return new Set([...closedAt].filter(([, at]) => at > sinceMs).map(([s]) => s));
        },
      });
      const close = (s: string, atMs: number) => {
        closedAt.set(s, atMs);
        answers.set(s, { source: s, workflowStatus: 'COMPLETED', stats: statsOf(1, 'finished') });
      };
      return { asked, since, poller, close, tick: (ms: number) => (nowMs += ms), now: () => nowMs };
    }

    it('shows every source from the first poll while asking only a few of them', async () => {
      const { asked, poller, tick } = setUp(100);
      const statuses = await poller.poll();
      expect(asked.length).toBe(5);
      expect(statuses).toHaveLength(100);
      expect(statuses.find((s) => !asked.includes(s.source))).toMatchObject({ workflowStatus: 'RUNNING', stats: null, unanswered: { note: 'not asked yet', total: 7 } });
      // 5 new a poll and 2 in turn: all 100 asked within 20 polls.
      for (let i = 0; i < 19; i++) {
        tick(1000);
        await poller.poll();
      }
      expect(new Set(asked).size).toBe(100);
    });

    it('asks a source that closed at the next poll, and never again', async () => {
      const { asked, since, poller, close, tick, now } = setUp(50);
      for (let i = 0; i < 10; i++) {
        tick(1000);
        await poller.poll();
      }
      // Closed just before the last poll began: a listing reaches back past it.
      close('s40', now() - 2000);
      tick(1000);
      asked.length = 0;
      await poller.poll();
      expect(since.at(-1)).toBe(now() - 1000 - 5000);
      expect(asked).toContain('s40');
      expect(poller.statuses().find((s) => s.source === 's40')!.workflowStatus).toBe('COMPLETED');
      asked.length = 0;
      for (let i = 0; i < 30; i++) {
        tick(1000);
        await poller.poll();
      }
      expect(asked).not.toContain('s40');
    });

    it('goes on without a listing the server refuses, saying so, and finds closes by the turns', async () => {
      const sources = ['a', 'b', 'c'];
      const answers = new Map(sources.map((s) => [s, { source: s, workflowStatus: 'RUNNING', stats: statsOf(0) } as SourceStatus]));
      const errors: unknown[] = [];
      const poller = new StatusPoller(sources, async (s) => answers.get(s)!, {
        perPoll: 1,
        closedSince: async () => { throw new Error('operator CloseTime not supported'); },
        onListingError: (err) => errors.push(err),
      });
      await poller.poll();
      answers.set('b', { source: 'b', workflowStatus: 'COMPLETED', stats: statsOf(1, 'finished') });
      for (let i = 0; i < 3; i++) await poller.poll();
      expect(errors).toHaveLength(3);
      expect(poller.statuses().map((s) => s.workflowStatus)).toEqual(['RUNNING', 'COMPLETED', 'RUNNING']);
    });

    it('finds a close the listing missed by the turns', async () => {
      const { asked, poller, close, tick } = setUp(10);
      await poller.poll();
      await poller.poll();
      // Closed long before any listing reaches: never listed.
      close('s7', 0);
      asked.length = 0;
      for (let i = 0; i < 5; i++) {
        tick(1000);
        await poller.poll();
      }
      expect(poller.statuses().find((s) => s.source === 's7')!.workflowStatus).toBe('COMPLETED');
    });
  });

  describe('with a listing of the monitors that started (status --watch of every source)', () => {
    it('takes in sources started after the first listing, and asks again one started after it ended', async () => {
      const answers = new Map<string, SourceStatus>([['a', { source: 'a', workflowStatus: 'COMPLETED', stats: null }]]);
      const startedAt = new Map<string, number>();
      const since: number[] = [];
      const asked: string[] = [];
      let nowMs = 10_000;
      const poller = new StatusPoller(['a'], async (s) => {
        asked.push(s);
        return answers.get(s)!;
      }, {
        now: () => nowMs,
        startedSince: {
          fromMs: 9_000,
          list: async (sinceMs) => {
            since.push(sinceMs);
            return new Set([...startedAt].filter(([, at]) => at > sinceMs).map(([s]) => s));
          },
        },
      });
      expect((await poller.poll()).map((s) => s.source)).toEqual(['a']);
      // The first listing reaches back from when the sources given were listed.
      expect(since).toEqual([4_000]);
      // Started while it watches: b, and a again (its monitor ended before).
      nowMs += 5_000;
      startedAt.set('b', nowMs - 100);
      startedAt.set('a', nowMs - 50);
      answers.set('b', { source: 'b', workflowStatus: 'RUNNING', stats: null });
      answers.set('a', { source: 'a', workflowStatus: 'RUNNING', stats: null });
      asked.length = 0;
      const statuses = await poller.poll();
      expect(since[1]).toBe(10_000 - 5_000);
      expect(statuses.map((s) => [s.source, s.workflowStatus])).toEqual([['a', 'RUNNING'], ['b', 'RUNNING']]);
      expect(asked.sort()).toEqual(['a', 'b']);
      // Listed again within the overlap: still one row each.
      nowMs += 1_000;
      expect((await poller.poll()).map((s) => s.source)).toEqual(['a', 'b']);
    });

    it('goes on without it when the listing fails, saying so', async () => {
      const errors: unknown[] = [];
      const poller = new StatusPoller(['a'], async (s) => ({ source: s, workflowStatus: 'RUNNING', stats: null }), {
        startedSince: { fromMs: 0, list: async () => { throw new Error('StartTime not supported'); }, onError: (err) => errors.push(err) },
      });
      expect((await poller.poll()).map((s) => s.source)).toEqual(['a']);
      expect(errors).toHaveLength(1);
    });
  });
});
