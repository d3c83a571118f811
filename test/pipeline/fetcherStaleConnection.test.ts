import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createCrawlActivities } from '../../src/activities/crawlActivities';
import { StoreRecorder } from '../../src/activities/storeRecorder';
import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { Fetcher } from '../../src/pipeline/fetcher';
import { ImagePipeline } from '../../src/pipeline/imagePipeline';
import { Spool } from '../../src/pipeline/spool';
import { LocalStore } from '../../src/pipeline/store';
import type { FetchBatchInput, FetchBatchResult } from '../../src/shared/types';

type How = 'reset' | 'end' | '408' | 'cut';

/**
 * A keep-alive site on 127.0.0.1 that closes a connection unanswered when `refuse` says so,
 * the way a request that crossed the site's idle close in flight is met: reset by the kernel
 * (`reset`), met by the close's FIN (`end`), or by the 408 some servers send as they close an
 * idle connection (`408`). It counts what it answered and what it refused.
 */
class ClosingSite {
  connections = 0;
  /** Requests the fetcher said it sent again (its onResend). */
  resent = 0;
  answered: string[] = [];
  refused: string[] = [];
  /** Every request as it arrived. */
  arrivals: { path: string; atMs: number }[] = [];
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();

  constructor(private readonly how: How, refuse: (site: ClosingSite, requestOnConnection: number, connectionAgeMs: number, idleMs: number) => boolean) {
    this.server = net.createServer((socket) => {
      this.connections += 1;
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      const openedAt = Date.now();
      let lastAnswerAt = openedAt;
      let requests = 0;
      let buffered = '';
      socket.on('error', () => undefined);
      socket.on('data', (chunk) => {
        buffered += chunk.toString('latin1');
        for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
          const path = buffered.slice(0, end).split(' ')[1]!;
          buffered = buffered.slice(end + 4);
          requests += 1;
          this.arrivals.push({ path, atMs: Date.now() });
          if (refuse(this, requests, Date.now() - openedAt, Date.now() - lastAnswerAt)) {
            this.refused.push(path);
            if (this.how === 'reset') socket.resetAndDestroy();
            else if (this.how === 'end') socket.end();
            // Began to answer (the request was read), then the connection broke.
            else if (this.how === 'cut') socket.end('HTTP/1.1 200 OK\r\ncontent-ty');
            else socket.end('HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
            return;
          }
          this.answered.push(path);
          lastAnswerAt = Date.now();
          socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok');
        }
      });
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A fetcher and a ClosingSite for `body`, both closed after it. */
async function withSite(how: How, refuse: ConstructorParameters<typeof ClosingSite>[1], body: (site: ClosingSite, base: string, f: Fetcher) => Promise<void>): Promise<void> {
  const site = new ClosingSite(how, refuse);
  const base = await site.start();
  const f = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }), { onResend: () => { site.resent += 1; } });
  try {
    await body(site, base, f);
  } finally {
    await f.close();
    await site.stop();
  }
}

/**
 * /a answered, then /b on the same connection after `waitMs` (undici frees it just after /a
 * resolves: a request sent at once opens another). 600 ms: a wait a site's idle timeout can
 * end (IDLE_CLOSE_MIN_MS).
 */
async function secondOnSameConnection(base: string, f: Fetcher, waitMs = 600) {
  expect((await f.fetch(`${base}/a`)).status).toBe(200);
  await new Promise((resolve) => setTimeout(resolve, waitMs));
  return f.fetch(`${base}/b`);
}

describe.each(['reset', 'end', '408'] as const)('a keep-alive connection the site closed unanswered (%s)', (how) => {
  // What the one attempt of a request the site refused comes back as.
  const refusedAnswer = how === '408' ? { ok: false, status: 408, sent: true } : { ok: false, failure: 'network', sent: true };

  it('is followed by the same request once more, on a new connection, which the site answers', async () => {
    // Every connection's second request crosses the site's idle close.
    await withSite(how, (_site, n) => n > 1, async (site, base, f) => {
      expect(await secondOnSameConnection(base, f)).toMatchObject({ ok: true, status: 200, sent: true });
      expect(site.refused).toEqual(['/b']);
      expect(site.answered).toEqual(['/a', '/b']);
      expect(site.connections).toBe(2);
      expect(site.resent).toBe(1); // for the crawl_requests_resent metric
    });
  });

  it('is sent again only once: a site that refuses the new connection too gets two attempts', async () => {
    await withSite(how, (s) => s.answered.length > 0, async (site, base, f) => {
      expect(await secondOnSameConnection(base, f)).toMatchObject(refusedAnswer);
      expect(site.refused).toEqual(['/b', '/b']);
      expect(site.connections).toBe(2);
      expect(site.resent).toBe(1);
    });
  });

  it('is followed by the same request once more when it was opened ahead and waited a second or more', async () => {
    // The site's idle timeout applies to a connection that has carried nothing yet, too.
    await withSite(how, (_site, n, ageMs) => n === 1 && ageMs >= 1_000, async (site, base, f) => {
      f.preconnect(`${base}/a`, Date.now() + 1_100);
      // Timed from when the site has the connection: on a loaded machine it may open late.
      while (site.connections === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      expect(await f.fetch(`${base}/a`)).toMatchObject({ ok: true, status: 200 });
      expect(site.refused).toEqual(['/a']);
      expect(site.answered).toEqual(['/a']);
      // Two, or three when the closed connection is replaced ahead of the (past) slot as well.
      expect(site.connections).toBeGreaterThanOrEqual(2);
    });
  });

  it('is not sent again when the connection answered a moment before: the site dropped a request it had read', async () => {
    // nginx's 444, or a limiter that closes instead of answering: not an idle timeout.
    await withSite(how, (_site, n) => n > 1, async (site, base, f) => {
      expect(await secondOnSameConnection(base, f, 100)).toMatchObject(refusedAnswer);
      expect(site.refused).toEqual(['/b']);
      expect(site.connections).toBe(1);
      expect(site.resent).toBe(0);
    });
  });

  it('is not sent again when the connection was opened for it: a site that closes every one is asked once', async () => {
    await withSite(how, () => true, async (site, base, f) => {
      expect(await f.fetch(`${base}/a`)).toMatchObject(refusedAnswer);
      expect(site.refused).toEqual(['/a']);
      expect(site.connections).toBe(1);
      expect(site.resent).toBe(0);
    });
  });
});

// A 408 closes its connection, and undici's pool then opens a new one for the next request,
// so only resets and closes leave a reused connection to test this on.
describe.each(['reset', 'end'] as const)('a site that dropped a request sent again on a new connection too (%s)', (how) => {
  it('is not sent again to a site that closed a request sent again too: it drops requests', async () => {
    // Reused connections are refused; so is /b's second try on its new connection.
    await withSite(how, (s, n) => n > 1 || s.refused.length === 1, async (site, base, f) => {
      expect(await secondOnSameConnection(base, f)).toMatchObject({ ok: false, failure: 'network', sent: true });
      expect(site.refused).toEqual(['/b', '/b']);
      expect((await f.fetch(`${base}/c`)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 600));
      // Before, /d was sent again on a new connection (answered there): two requests at once.
      expect(await f.fetch(`${base}/d`)).toMatchObject({ ok: false, failure: 'network', sent: true });
      expect(site.refused).toEqual(['/b', '/b', '/d']);
      expect(site.answered).toEqual(['/a', '/c']);
      expect(site.resent).toBe(1);
    });
  });
});

describe('a keep-alive connection the site closed part-way through its answer', () => {
  it('is not sent again: the site had read the request, and a second at once would make two in one slot', async () => {
    await withSite('cut', (_site, n) => n > 1, async (site, base, f) => {
      expect(await secondOnSameConnection(base, f)).toMatchObject({ ok: false, failure: 'network', sent: true });
      expect(site.refused).toEqual(['/b']);
      expect(site.connections).toBe(1);
      expect(site.resent).toBe(0);
    });
  });
});

describe('a site seen to close connections that waited a while', () => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
  // The first request with a send-by time in a process pays for its handler's first run (18-27
  // ms on a loaded machine, 3.5 ms after): more than the 10 ms these tests give one.
  beforeAll(() => withSite('reset', () => false, async (_site, base, f) => {
    await f.fetch(`${base}/warm`, { sendBy: Date.now() + 60_000 });
  }));

  it('has its connections that would have waited as long by a slot closed, and one opened ahead instead', async () => {
    // Resets a request on a connection that waited 600 ms or more since its last answer: the
    // race with its idle close, as a site with a 600 ms idle timeout meets a request.
    await withSite('reset', (_site, n, _ageMs, idleMs) => n > 1 && idleMs >= 600, async (site, base, f) => {
      expect((await f.fetch(`${base}/a`)).status).toBe(200);
      await sleep(800);
      // Reset, then sent again on a new connection: the fetcher learns the site's limit from it.
      expect(await f.fetch(`${base}/b`)).toMatchObject({ ok: true, status: 200 });
      expect(site.resent).toBe(1);
      const slotMs = Date.now() + 800;
      f.preconnect(`${base}/c`, slotMs);
      await sleep(slotMs - Date.now());
      // Left at once (give or take a stall of the machine); the connection count says which it took.
      expect(await f.fetch(`${base}/c`, { sendBy: Date.now() + 50 })).toMatchObject({ ok: true, status: 200, sent: true });
      // Before, /c went on the connection that had waited 800 ms, was reset and sent again.
      expect(site.refused).toEqual(['/b']);
      expect(site.resent).toBe(1);
      expect(site.connections).toBe(3);
    });
  });

  it('keeps a connection that has not waited that long', async () => {
    await withSite('reset', (_site, n, _ageMs, idleMs) => n > 1 && idleMs >= 600, async (site, base, f) => {
      expect((await f.fetch(`${base}/a`)).status).toBe(200);
      await sleep(800);
      expect(await f.fetch(`${base}/b`)).toMatchObject({ ok: true, status: 200 });
      const slotMs = Date.now() + 150;
      f.preconnect(`${base}/c`, slotMs);
      await sleep(slotMs - Date.now());
      expect(await f.fetch(`${base}/c`)).toMatchObject({ ok: true, status: 200 });
      expect(site.refused).toEqual(['/b']);
      expect(site.connections).toBe(2); // /c on /b's connection, 150 ms after its answer
    });
  });
});

describe('a paced grant that meets a site closing its idle connections (the fetch activity)', () => {
  it('sends the request the close met again in the grant\'s next slot, not at once: one request a slot at the site', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawl-stale-'));
    // The site closes a connection that waited 500 ms or more: at 700 ms a slot, each reused one.
    const site = new ClosingSite('reset', (_site, n, _ageMs, idleMs) => n > 1 && idleMs >= 500);
    const base = await site.start();
    const store = new LocalStore(path.join(dir, 'store'));
    let resent = 0;
    const pipeline = new ImagePipeline(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }), store, new Spool(path.join(dir, 'spool')), { onResend: () => { resent += 1; } });
    const acts = createCrawlActivities({ processor: pipeline, recorder: new StoreRecorder(store) });
    try {
      const intervalMs = 700;
      const startMs = Date.now() + 100;
      const grant: FetchBatchInput = {
        source: new URL(base).host, batchId: 'b1', grantId: 1, maxAttempts: 3,
        items: ['/a.jpg', '/b.jpg'].map((p) => ({ url: `${base}${p}`, attempt: 1 })),
        // robots.txt, /a, /a again, /b, and two to spare.
        schedule: { startMs, endMs: startMs + 6 * intervalMs, intervalMs, burstSlots: 0 },
      };
      const result = (await new MockActivityEnvironment().run(acts.fetchBatch, grant)) as FetchBatchResult;
      expect(site.refused).toEqual(['/a.jpg']);
      expect(resent).toBe(1);
      // Answered in the end (a text body: not an image), each with its first attempt and sent.
      expect(result.outcomes.map((o) => [new URL(o.url).pathname, o.cls, o.attempt])).toEqual([['/a.jpg', 'content', 1], ['/b.jpg', 'content', 1]]);
      expect(result.unused).toEqual([]);
      const gaps = site.arrivals.slice(1).map((r, i) => r.atMs - site.arrivals[i]!.atMs);
      // Before, /a went again at once, 1-5 ms after the request the close met.
      expect(Math.min(...gaps)).toBeGreaterThanOrEqual(intervalMs - 15);
    } finally {
      await pipeline.close();
      await site.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
