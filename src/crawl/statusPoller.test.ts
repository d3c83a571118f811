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
    }, 3);
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
});
