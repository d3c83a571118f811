import { isUnreachableRetry, ServerReachability, shortStatus } from './serverReachability';

// As the SDK's core logs it (a worker's log while its server was killed).
const REFUSED = 'Status { code: Unavailable, message: "tcp connect error", source: Some(tonic::transport::Error(Transport, ConnectError(ConnectError("tcp connect error", 127.0.0.1:7500, Os { code: 111, kind: ConnectionRefused, message: "Connection refused" })))) }';

describe('ServerReachability', () => {
  it('knows the SDK client\'s retry lines for a server it cannot reach, and no others', () => {
    expect(isUnreachableRetry({ target: 'temporalio_client::retry', error: REFUSED })).toBe(true);
    expect(isUnreachableRetry({ target: 'temporalio_client::retry', error: 'Status { code: PermissionDenied, message: "bad key" }' })).toBe(false);
    expect(isUnreachableRetry({ target: 'temporalio_sdk_core::worker::activities', error: REFUSED })).toBe(false);
    expect(isUnreachableRetry(undefined)).toBe(false);
  });

  it('says what the error was in a few words', () => {
    expect(shortStatus(REFUSED)).toBe('Unavailable: tcp connect error (ConnectionRefused)');
    expect(shortStatus('something else')).toBe('something else');
  });

  it('gives one line when the server goes, a reminder every few minutes, and one when it answers again', () => {
    const r = new ServerReachability(300_000);
    expect(r.reachable(0)).toBeUndefined(); // never gone: nothing to say
    const first = r.unreachable(1_000, REFUSED);
    expect(first).toMatchObject({ level: 'warn', fields: { event: 'temporal.unreachable', error: 'Unavailable: tcp connect error (ConnectionRefused)' } });
    expect(r.down).toBe(true);
    for (let t = 1_500; t < 301_000; t += 500) expect(r.unreachable(t, REFUSED)).toBeUndefined();
    expect(r.unreachable(301_000, REFUSED)).toMatchObject({ level: 'warn', fields: { downForS: 300, retriesLeftOut: 601 } });
    expect(r.unreachable(302_000, REFUSED)).toBeUndefined();
    expect(r.reachable(311_000)).toEqual({ level: 'info', fields: { event: 'temporal.reachable', downForS: 310, retriesLeftOut: 602 }, msg: 'the Temporal server answers again' });
    expect(r.down).toBe(false);
    expect(r.reachable(312_000)).toBeUndefined();
    // Gone again: said again, counted afresh.
    expect(r.unreachable(400_000, REFUSED)).toMatchObject({ fields: { event: 'temporal.unreachable' } });
    expect(r.reachable(401_000)).toMatchObject({ fields: { downForS: 1, retriesLeftOut: 1 } });
  });
});
