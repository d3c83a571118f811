import { getEventListeners } from 'node:events';
import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { Fetcher, MAX_RESPONSE_HEADER_BYTES } from '../../src/pipeline/fetcher';
import { Origin } from '../support/origin';

// The total timeout and the caller's abort signal, and that neither outlives the request: a
// crawler makes millions of requests, and anything each one leaves behind adds up.
describe('Fetcher total timeout, cancellation and malformed responses (real undici, origin on 127.0.0.1)', () => {
  const origin = new Origin();
  let fetcher: Fetcher;

  beforeAll(async () => {
    origin
      .serve('/ok.jpg', Buffer.from('x'))
      // Accepts the request and never answers.
      .route('/silent.jpg', () => undefined)
      // Answers, then sends no more of the body.
      .route('/stalls.jpg', (_q, r) => { r.writeHead(200, { 'content-type': 'image/jpeg' }); r.write(Buffer.from([0xff, 0xd8, 0xff])); })
      .route('/429-stalls.jpg', (_q, r) => { r.writeHead(429, { 'retry-after': '30', 'content-type': 'text/html' }); r.write('<html>slow down'); })
      // A status line node:http would not write: straight onto the socket.
      .route('/long-headers.jpg', (_q, r) => { r.socket?.end(`HTTP/1.1 200 OK\r\ncontent-security-policy: ${'a'.repeat(100_000)}\r\ncontent-length: 3\r\n\r\nabc`); })
      .route('/huge-headers.jpg', (_q, r) => { r.socket?.end(`HTTP/1.1 200 OK\r\nx-padding: ${'a'.repeat(300_000)}\r\ncontent-length: 3\r\n\r\nabc`); })
      .route('/status-000.jpg', (_q, r) => { r.socket?.end('HTTP/1.1 000 Zero\r\ncontent-length: 0\r\n\r\n'); })
      .route('/length-and-chunked.jpg', (_q, r) => { r.socket?.end('HTTP/1.1 200 OK\r\ncontent-type: image/jpeg\r\ncontent-length: 10\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n'); })
      .route('/two-lengths.jpg', (_q, r) => { r.socket?.end('HTTP/1.1 200 OK\r\ncontent-type: image/jpeg\r\ncontent-length: 3\r\ncontent-length: 3\r\n\r\nabc'); })
      // 103 Early Hints every 20 ms, for ever; and two of them before a real answer.
      .route('/hints-forever.jpg', (_q, r) => {
        const hint = () => { if (!r.socket?.destroyed) r.socket?.write('HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\n'); };
        const timer = setInterval(hint, 20);
        r.socket?.on('close', () => clearInterval(timer));
      })
      .route('/hints-then-image.jpg', (_q, r) => {
        r.socket?.write('HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </b.css>; rel=preload\r\n\r\n');
        setTimeout(() => r.socket?.end('HTTP/1.1 200 OK\r\ncontent-type: image/jpeg\r\ncontent-length: 3\r\n\r\nabc'), 50);
      })
      .route('/cut-short.jpg', (_q, r) => { r.socket?.end('HTTP/1.1 200 OK\r\ncontent-type: image/jpeg\r\ncontent-length: 10\r\nconnection: close\r\n\r\nabc'); });
    await origin.start();
    fetcher = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'], totalTimeoutMs: 300, headersTimeoutMs: 10_000 }));
  });
  afterAll(async () => { await fetcher.close(); await origin.stop(); });

  it('gives up on a silent server at the total timeout', async () => {
    const started = Date.now();
    const res = await fetcher.fetch(origin.url('/silent.jpg'));
    expect(res).toMatchObject({ ok: false, failure: 'timeout', reason: 'total timeout', sent: true });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('keeps the status of a response whose body stalled', async () => {
    // How much of it had come is part of the reason: a body that never started is another fault.
    expect(await fetcher.fetch(origin.url('/stalls.jpg'))).toMatchObject({ ok: false, failure: 'timeout', reason: 'total timeout; 3 bytes of the body received', status: 200, sent: true });
    // The body of a 429 is dropped unread: its status and Retry-After are the answer, and the
    // activity's back-off needs them.
    const limited = await fetcher.fetch(origin.url('/429-stalls.jpg'));
    expect(limited).toMatchObject({ ok: false, status: 429, retryAfter: '30' });
    expect(limited.failure).toBeUndefined();
  });

  it("says nothing of the status when the caller's abort cut the response off", async () => {
    // The activity hands a URL its own abort cut off back unused (no attempt, no error against
    // the site) only when the result has no status.
    const caller = new AbortController();
    setTimeout(() => caller.abort(new Error('cancelled: grant revoked')), 150);
    const res = await new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'], totalTimeoutMs: 10_000 })).fetch(origin.url('/stalls.jpg'), { signal: caller.signal });
    expect(res).toMatchObject({ ok: false, sent: true });
    expect(res.status).toBeUndefined();
  });

  it('gives up on a server that sends informational responses for ever (undici restarts its headers timeout at each), and takes two before an answer', async () => {
    const patient = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'], totalTimeoutMs: 30_000, headersTimeoutMs: 5_000 }));
    try {
      const started = Date.now();
      const res = await patient.fetch(origin.url('/hints-forever.jpg'));
      expect(res).toMatchObject({ ok: false, failure: 'protocol', reason: 'more than 5 informational (1xx) responses and no answer', sent: true });
      expect(Date.now() - started).toBeLessThan(3_000);
      const hinted = await patient.fetch(origin.url('/hints-then-image.jpg'));
      expect(hinted).toMatchObject({ ok: true, status: 200 });
      expect(hinted.body?.toString()).toBe('abc');
    } finally {
      await patient.close();
    }
  });

  it('calls a status line of 000 a malformed response, in one line', async () => {
    const res = await fetcher.fetch(origin.url('/status-000.jpg'));
    expect(res).toMatchObject({ ok: false, failure: 'protocol' });
    expect(res.reason).toMatch(/^malformed response \(/);
    expect(res.reason).not.toContain('\n');
  });

  it('takes headers of 100 KB (a long policy, as browsers do), and says those past its limit are too large, and how large', async () => {
    // Node's own limit of 16 KiB refused these as a malformed response.
    expect(await fetcher.fetch(origin.url('/long-headers.jpg'))).toMatchObject({ ok: true, status: 200 });
    const res = await fetcher.fetch(origin.url('/huge-headers.jpg'));
    expect(res).toMatchObject({ ok: false, failure: 'protocol', reason: `response headers larger than ${MAX_RESPONSE_HEADER_BYTES} bytes (UND_ERR_HEADERS_OVERFLOW)` });
  });

  it('calls two Content-Length headers a malformed response (asked again, the answer is the same), not a body cut short', async () => {
    const res = await fetcher.fetch(origin.url('/two-lengths.jpg'));
    expect(res).toMatchObject({ ok: false, failure: 'protocol', reason: expect.stringMatching(/^malformed response \(its Content-Length/) });
    // Beside a chunked Transfer-Encoding (a request-smuggling shape RFC 9112 forbids): the same.
    expect(await fetcher.fetch(origin.url('/length-and-chunked.jpg'))).toMatchObject({ ok: false, failure: 'protocol',
      reason: 'malformed response (its Content-Length header is sent twice, is not a number, or comes with Transfer-Encoding)' });
    // A body that really was cut short stays a network failure, which is asked again.
    const cut = await fetcher.fetch(origin.url('/cut-short.jpg'));
    expect(cut).toMatchObject({ ok: false, status: 200, failure: 'network', reason: expect.stringMatching(/; 3 of 10 bytes of the body received$/) });
  });

  it("stops when the caller's signal aborts", async () => {
    const caller = new AbortController();
    setTimeout(() => caller.abort(new Error('activity cancelled')), 50);
    const res = await fetcher.fetch(origin.url('/silent.jpg'), { signal: caller.signal });
    expect(res.ok).toBe(false);
    expect(res.reason).not.toBe('total timeout');
  });

  it("leaves no listener on the caller's signal once a request is done", async () => {
    const caller = new AbortController();
    expect((await fetcher.fetch(origin.url('/ok.jpg'), { signal: caller.signal })).ok).toBe(true);
    expect((await fetcher.fetch(origin.url('/silent.jpg'), { signal: caller.signal })).failure).toBe('timeout');
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });
});
