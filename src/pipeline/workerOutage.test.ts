import { noRouteError, type OutageChange, WorkerOutageWatch } from './workerOutage';

function watch(opts: { maxHoldMs?: number } = {}) {
  let t = 1_000_000;
  const changes: OutageChange[] = [];
  const w = new WorkerOutageWatch({ now: () => t, onChange: (c) => changes.push(c), ...opts });
  return { w, changes, advance: (ms: number) => { t += ms; } };
}

describe('WorkerOutageWatch', () => {
  it('takes no-route failures at three sites, with none answering for 2 s, for the worker\'s outage', () => {
    const { w, changes, advance } = watch();
    w.answered();
    advance(2_500);
    expect(w.noRoute('http://a')).toBe(false);
    expect(w.noRoute('http://b')).toBe(false);
    expect(w.noRoute('http://b')).toBe(false); // the same site twice is still two sites
    expect(w.down).toBe(false);
    expect(w.noRoute('http://c')).toBe(true);
    expect(w.down).toBe(true);
    expect(w.noRoute('http://a')).toBe(true);
    expect(changes).toEqual([{ kind: 'down', origins: 3, quietMs: 2_500 }]);
    advance(30_000);
    w.answered();
    expect(w.down).toBe(false);
    expect(changes[1]).toEqual({ kind: 'back', downMs: 30_000, notCounted: 2 });
    // The next failure is a site's again until the pattern returns.
    expect(w.noRoute('http://a')).toBe(false);
  });

  it('counts failures while any site still answers within 2 s', () => {
    const { w, advance } = watch();
    for (let i = 0; i < 20; i++) {
      w.answered();
      advance(1_900);
      expect(w.noRoute(`http://dead${i % 5}`)).toBe(false);
    }
    expect(w.down).toBe(false);
  });

  it('counts failures when fewer than three sites are unreachable, however long the quiet', () => {
    const { w, advance } = watch();
    w.answered();
    for (let i = 0; i < 100; i++) {
      advance(1_000);
      expect(w.noRoute(i % 2 ? 'http://a' : 'http://b')).toBe(false);
    }
  });

  it('counts failures for a worker no site has ever answered: nothing to tell an outage by', () => {
    const { w, advance } = watch();
    advance(60_000);
    for (const o of ['http://a', 'http://b', 'http://c', 'http://d']) expect(w.noRoute(o)).toBe(false);
    expect(w.down).toBe(false);
  });

  it('counts failures again after the longest hold, so a crawl of dead sites still ends', () => {
    const { w, changes, advance } = watch({ maxHoldMs: 60_000 });
    w.answered();
    advance(10_000);
    w.noRoute('http://a');
    w.noRoute('http://b');
    expect(w.noRoute('http://c')).toBe(true);
    advance(60_000);
    expect(w.noRoute('http://a')).toBe(true);
    advance(1);
    expect(w.noRoute('http://b')).toBe(false);
    expect(w.noRoute('http://c')).toBe(false);
    expect(w.down).toBe(false);
    expect(changes.map((c) => c.kind)).toEqual(['down', 'too-long']);
    expect(changes[1]).toEqual({ kind: 'too-long', downMs: 60_001, notCounted: 2 });
    // An answer starts afresh.
    w.answered();
    expect(changes.map((c) => c.kind)).toEqual(['down', 'too-long', 'back']);
    advance(10_000);
    w.noRoute('http://a');
    w.noRoute('http://b');
    expect(w.noRoute('http://c')).toBe(true);
  });

  it('tells listeners when the state changes, and whether it was down since a given time', () => {
    const { w, advance } = watch({ maxHoldMs: 60_000 });
    let calls = 0;
    const stop = w.listen(() => { calls += 1; });
    w.answered();
    const before = 1_000_000;
    advance(10_000);
    w.noRoute('http://a');
    w.noRoute('http://b');
    expect(calls).toBe(0);
    expect(w.wasDownSince(before)).toBe(false);
    w.noRoute('http://c');
    expect(calls).toBe(1);
    w.noRoute('http://d'); // still down: no change
    expect(calls).toBe(1);
    const during = 1_000_000 + 20_000;
    advance(10_000);
    w.answered();
    expect(calls).toBe(2);
    expect(w.down).toBe(false);
    // Scheduled before or during the outage: it was down since. After it ended: not.
    expect(w.wasDownSince(before)).toBe(true);
    expect(w.wasDownSince(during)).toBe(true);
    advance(1);
    expect(w.wasDownSince(1_000_000 + 20_001)).toBe(false);
    w.answered(); // an answer while up changes nothing
    expect(calls).toBe(2);
    // The hold running out ends the state too; the answer after it is no second change.
    advance(10_000);
    w.noRoute('http://a');
    w.noRoute('http://b');
    w.noRoute('http://c');
    expect(calls).toBe(3);
    advance(60_001);
    w.noRoute('http://a');
    expect(w.down).toBe(false);
    expect(calls).toBe(4);
    w.answered();
    expect(calls).toBe(4);
    stop();
    advance(10_000);
    for (const o of ['http://a', 'http://b', 'http://c']) w.noRoute(o);
    expect(w.down).toBe(true);
    expect(calls).toBe(4);
  });
});

describe('noRouteError', () => {
  const err = (code: string, syscall?: string) => Object.assign(new Error(code), { code, ...(syscall ? { syscall } : {}) });

  it('knows connect failures that reached no host', () => {
    expect(noRouteError(err('ENETUNREACH', 'connect'))).toBe(true);
    expect(noRouteError(err('EHOSTUNREACH', 'connect'))).toBe(true);
    expect(noRouteError(err('ETIMEDOUT', 'connect'))).toBe(true);
    expect(noRouteError(err('UND_ERR_CONNECT_TIMEOUT'))).toBe(true);
    expect(noRouteError(err('EAI_AGAIN', 'getaddrinfo'))).toBe(true);
    expect(noRouteError({ cause: err('ENETUNREACH', 'connect') })).toBe(true);
  });

  it('leaves the sites\' own failures to them', () => {
    expect(noRouteError(err('ECONNREFUSED', 'connect'))).toBe(false); // the host answered with a reset
    expect(noRouteError(err('ENOTFOUND', 'getaddrinfo'))).toBe(false); // the DNS answered: no such name
    expect(noRouteError(err('ECONNRESET', 'read'))).toBe(false);
    expect(noRouteError(err('ETIMEDOUT', 'read'))).toBe(false); // the request may have been sent
    expect(noRouteError(err('ENETUNREACH', 'write'))).toBe(false);
    expect(noRouteError(new Error('boom'))).toBe(false);
    expect(noRouteError(undefined)).toBe(false);
  });
});
