import { isServerUnreachable, outageLine, ServerOutageNotice } from './serverOutage';

// What @temporalio/client threw from a status call while an operator's server was restarting.
const described = Object.assign(new Error('Failed to describe workflow: 14 UNAVAILABLE: No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:7500. Resolution note: '), {
  cause: Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 }),
});

describe('ServerOutageNotice', () => {
  it('knows a call that could not reach the server from other failures', () => {
    expect(isServerUnreachable(described)).toBe(true);
    expect(isServerUnreachable(Object.assign(new Error('x'), { code: 14 }))).toBe(true);
    expect(isServerUnreachable(new Error('14 UNAVAILABLE: No connection established'))).toBe(true);
    expect(isServerUnreachable(Object.assign(new Error('workflow not found'), { code: 5 }))).toBe(false);
    expect(isServerUnreachable(new Error('Failed to query workflow: 4 DEADLINE_EXCEEDED'))).toBe(false);
    expect(isServerUnreachable(undefined)).toBe(false);
  });

  it('says once that the server is gone, with the connection error, and once that it is back', () => {
    const n = new ServerOutageNotice('127.0.0.1:7500');
    expect(n.up(0)).toBeUndefined();
    expect(n.down(1_000, described)).toBe('cannot reach the Temporal server at 127.0.0.1:7500 (connect ECONNREFUSED 127.0.0.1:7500): waiting for it; ' +
      'workers that reach it go on, and progress shows again when it answers');
    expect(n.down(6_000, described)).toBeUndefined();
    expect(n.up(26_400)).toBe('the Temporal server at 127.0.0.1:7500 answers again (after 25 s)');
    expect(n.up(27_000)).toBeUndefined();
    expect(n.down(30_000, new Error('14 UNAVAILABLE: x'))).toContain('(14 UNAVAILABLE: x)');
  });

  it('prints a note over the progress bar on a terminal, else as a JSON event line', () => {
    expect(outageLine('down', 'gone', true)).toBe('\r\x1b[Kcrawl: gone\n');
    const down = JSON.parse(outageLine('down', 'gone', false)) as Record<string, unknown>;
    expect(down).toMatchObject({ event: 'temporal_unreachable', note: 'gone' });
    expect(Number.isNaN(Date.parse(String(down.time)))).toBe(false);
    expect(JSON.parse(outageLine('up', 'back', false))).toMatchObject({ event: 'temporal_reachable', note: 'back' });
    expect(outageLine('up', 'back', false).endsWith('}\n')).toBe(true);
  });
});
