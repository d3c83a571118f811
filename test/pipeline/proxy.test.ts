import { execFile } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { buildConnector } from 'undici';
import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { Fetcher } from '../../src/pipeline/fetcher';
import { parseProxy, probeProxy, ProxyError, proxyConnector } from '../../src/pipeline/proxy';
import { noRouteError, WorkerOutageWatch } from '../../src/pipeline/workerOutage';
import { connectProxy } from '../support/connectProxy';
import { imageOrigin, type Origin } from '../support/origin';

/** Requests through a real CONNECT proxy on 127.0.0.1 to real origins on other loopback addresses. */
const ROOT = path.resolve(__dirname, '..', '..');
const TLS = path.join(ROOT, 'test', 'fixtures', 'tls');
const execFileP = promisify(execFile);

describe('crawling through an HTTP proxy (CRAWL_PROXY)', () => {
  let origin: Origin;
  beforeAll(async () => { origin = await imageOrigin('127.0.0.2'); });
  afterAll(async () => { await origin.stop(); });

  async function withFetcher<T>(proxyUrl: string, allowNetworks: string[], use: (f: Fetcher) => Promise<T>, outage?: WorkerOutageWatch): Promise<T> {
    const fetcher = new Fetcher(pipelineConfigFromEnv({ allowNetworks, proxy: parseProxy(proxyUrl) }), outage ? { outage } : {});
    try {
      return await use(fetcher);
    } finally {
      await fetcher.close();
    }
  }

  it('fetches through a tunnel to the address, keeping the tunnel for the next request', async () => {
    const proxy = await connectProxy();
    try {
      await withFetcher(proxy.url, ['127.0.0.0/8'], async (f) => {
        const before = origin.requests.length;
        const connections = origin.connections;
        const first = await f.fetch(origin.url('/a.jpg'));
        // As a paced crawl's next slot comes: its connection is free again by then.
        await new Promise((resolve) => setTimeout(resolve, 50));
        const second = await f.fetch(origin.url('/b.jpg'));
        expect(origin.connections - connections).toBe(1);
        // A connection opened ahead of a paced slot is a tunnel too, and the request takes it.
        const other = await imageOrigin('127.0.0.4');
        try {
          const opened = f.warm.opened;
          f.preconnect(other.url('/c.jpg'));
          await new Promise((resolve) => setTimeout(resolve, 100));
          expect(f.warm.opened).toBe(opened + 1);
          expect(other.connections).toBe(1);
          expect(await f.fetch(other.url('/c.jpg'))).toMatchObject({ ok: true, status: 200 });
          expect(f.warm.opened).toBe(opened + 1);
          expect(other.connections).toBe(1);
        } finally {
          await other.stop();
        }
        expect(first).toMatchObject({ ok: true, status: 200 });
        expect(second).toMatchObject({ ok: true, status: 200 });
        expect(origin.requests.slice(before).map((r) => r.path)).toEqual(['/a.jpg', '/b.jpg']);
      });
      expect(proxy.asked).toEqual([
        { target: `127.0.0.2:${origin.port}`, authorization: undefined, userAgent: expect.stringMatching(/^PoliteImageCrawler\//) },
        expect.objectContaining({ target: expect.stringMatching(/^127\.0\.0\.4:\d+$/) }),
      ]);
    } finally {
      await proxy.close();
    }
  });

  it('asks the proxy for the address the guard checked, never the name, so the proxy cannot resolve it elsewhere', async () => {
    const proxy = await connectProxy();
    const looked: string[] = [];
    const connect = proxyConnector(parseProxy(proxy.url), {
      // A name the guard resolved (and judged) to the origin's address.
      lookup: (hostname, cb) => { looked.push(hostname); cb(null, '127.0.0.2'); },
      tls: buildConnector({}), timeoutMs: 2_000, userAgent: 'Test/1.0 (+https://example.org)',
    });
    try {
      const socket = await new Promise<net.Socket>((resolve, reject) => {
        connect({ protocol: 'http:', hostname: 'images.example', host: `images.example:${origin.port}`, port: String(origin.port) }, (err, s) => (err ? reject(err) : resolve(s as net.Socket)));
      });
      const answer = await new Promise<string>((resolve) => {
        let text = '';
        socket.on('data', (d) => { text += d; if (text.includes('\r\n\r\n')) resolve(text); });
        socket.resume();
        socket.write(`GET /named.jpg HTTP/1.1\r\nHost: images.example:${origin.port}\r\nConnection: close\r\n\r\n`);
      });
      socket.destroy();
      expect(answer).toMatch(/^HTTP\/1\.1 200/);
      expect(looked).toEqual(['images.example']);
      expect(proxy.asked.map((a) => a.target)).toEqual([`127.0.0.2:${origin.port}`]);
    } finally {
      await proxy.close();
    }
  });

  it('keeps the network guard: a refused address is refused here, and the proxy is asked nothing', async () => {
    const proxy = await connectProxy();
    try {
      // The proxy itself is on loopback, which the guard does not open: the guard judges sites, not the proxy.
      await withFetcher(proxy.url, [], async (f) => {
        expect(await f.fetch(origin.url('/a.jpg'))).toMatchObject({ ok: false, failure: 'refused', reason: expect.stringMatching(/loopback; not allowed/) });
        expect(await f.fetch(`http://localhost:${origin.port}/a.jpg`)).toMatchObject({ ok: false, failure: 'refused', reason: expect.stringMatching(/refused localhost: .*loopback; not allowed/) });
      });
      expect(proxy.asked).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('sends the user and password the proxy URL carries, and says what to do when the proxy wants them', async () => {
    const proxy = await connectProxy({ auth: 'crawler:s3cr%t' });
    try {
      const without = await withFetcher(proxy.url, ['127.0.0.0/8'], (f) => f.fetch(origin.url('/a.jpg')));
      expect(without).toMatchObject({ ok: false, failure: 'network', reason: expect.stringContaining(`the proxy ${proxy.url} asks for a user and password (407 Proxy Authentication Required): give them in CRAWL_PROXY`) });
      const wrong = await withFetcher(`http://crawler:nope@127.0.0.1:${proxy.port}`, ['127.0.0.0/8'], (f) => f.fetch(origin.url('/a.jpg')));
      expect(wrong).toMatchObject({ ok: false, reason: expect.stringContaining('the ones in CRAWL_PROXY were not accepted') });
      expect(JSON.stringify(wrong)).not.toContain('nope');
      const right = await withFetcher(`http://crawler:s3cr%25t@127.0.0.1:${proxy.port}`, ['127.0.0.0/8'], (f) => f.fetch(origin.url('/a.jpg')));
      expect(right).toMatchObject({ ok: true, status: 200 });
      expect(proxy.asked.at(-1)!.authorization).toBe(`Basic ${Buffer.from('crawler:s3cr%t').toString('base64')}`);
    } finally {
      await proxy.close();
    }
  });

  it('tells the proxy refusing a site, failing to reach it, and being down apart', async () => {
    const proxy = await connectProxy({ refusePorts: [origin.port] });
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.3', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    // The proxy's word on a site is an answer: the worker's network works (workerOutage.ts).
    const outage = new WorkerOutageWatch();
    const answered = jest.spyOn(outage, 'answered');
    try {
      await withFetcher(proxy.url, ['127.0.0.0/8'], async (f) => {
        expect(await f.fetch(origin.url('/a.jpg'))).toMatchObject({ ok: false, failure: 'refused', reason: `the proxy ${proxy.url} refused a tunnel to 127.0.0.2:${origin.port} (403 Forbidden)` });
        expect(await f.fetch(`http://127.0.0.3:${deadPort}/a.jpg`)).toMatchObject({ ok: false, failure: 'network', reason: `the proxy ${proxy.url} could not reach 127.0.0.3:${deadPort} (502 Bad Gateway)` });
      }, outage);
      expect(answered).toHaveBeenCalledTimes(2);
      const down = await withFetcher(`http://127.0.0.1:${deadPort}`, ['127.0.0.0/8'], (f) => f.fetch(origin.url('/a.jpg')), outage);
      expect(answered).toHaveBeenCalledTimes(2);
      expect(down).toMatchObject({ ok: false, failure: 'network', reason: expect.stringContaining(`cannot reach the proxy http://127.0.0.1:${deadPort} (CRAWL_PROXY)`) });
      // What a worker says at start about the proxy it was given.
      expect(await probeProxy(parseProxy(proxy.url), 2_000)).toBeUndefined();
      expect(await probeProxy(parseProxy(`http://127.0.0.1:${deadPort}`), 2_000)).toMatch(/ECONNREFUSED/);
    } finally {
      await proxy.close();
    }
    // A proxy down, or refusing our password, is the worker's way out failing: no site is to blame.
    expect(noRouteError(new ProxyError('down', 'EPROXYDOWN'))).toBe(true);
    expect(noRouteError(new ProxyError('auth', 'EPROXYAUTH'))).toBe(true);
    expect(noRouteError(new ProxyError('502', 'EPROXYBADGATEWAY'))).toBe(false);
  });

  it('runs TLS end to end through the tunnel, verified as without a proxy (CRAWL_PROXY as a worker reads it)', async () => {
    const cert = fs.readFileSync(path.join(TLS, 'cert.pem'));
    const key = fs.readFileSync(path.join(TLS, 'key.pem'));
    const server = https.createServer({ cert, key }, (_req, res) => { res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': 3 }); res.end('abc'); });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const site = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const proxy = await connectProxy();
    try {
      // Not trusted: refused inside the tunnel, before any request.
      const untrusted = await withFetcher(proxy.url, ['127.0.0.0/8'], (f) => f.fetch(`${site}/x.jpg`));
      expect(untrusted).toMatchObject({ ok: false, failure: 'network', reason: expect.stringMatching(/SELF_SIGNED_CERT|self[- ]signed/i) });
      // Trusted (Node reads NODE_EXTRA_CA_CERTS at start: a child process, as bin/crawl runs).
      const fetcherJs = path.join(ROOT, 'dist', 'src', 'pipeline', 'fetcher.js');
      const configJs = path.join(ROOT, 'dist', 'src', 'pipeline', 'config.js');
      if (!fs.existsSync(fetcherJs)) throw new Error('build first: npm run build (make test does it)');
      const script = `
        const { Fetcher } = require(${JSON.stringify(fetcherJs)});
        const { pipelineConfigFromEnv } = require(${JSON.stringify(configJs)});
        const f = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }));
        f.fetch(${JSON.stringify(`${site}/y.jpg`)}).then(async (r) => { console.log(JSON.stringify({ ...r, body: r.body && r.body.toString() })); await f.close(); });`;
      const { stdout } = await execFileP(process.execPath, ['-e', script], {
        env: { ...process.env, NODE_EXTRA_CA_CERTS: path.join(TLS, 'cert.pem'), CRAWL_PROXY: `127.0.0.1:${proxy.port}` },
      });
      expect(JSON.parse(stdout)).toMatchObject({ ok: true, status: 200, body: 'abc' });
      expect(proxy.asked.map((a) => a.target)).toEqual([`127.0.0.1:${new URL(site).port}`, `127.0.0.1:${new URL(site).port}`]);
    } finally {
      await proxy.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('reads CRAWL_PROXY strictly, never showing its password', () => {
    expect(parseProxy('http://u:p%40ss@proxy.example:3128')).toEqual({
      host: 'proxy.example', port: 3128, shown: 'http://proxy.example:3128', authorization: `Basic ${Buffer.from('u:p@ss').toString('base64')}`,
    });
    expect(parseProxy('proxy.example:8080')).toMatchObject({ host: 'proxy.example', port: 8080, shown: 'http://proxy.example:8080' });
    expect(parseProxy('http://[::1]:3128')).toMatchObject({ host: '::1', port: 3128 });
    expect(() => parseProxy('https://proxy.example:443')).toThrow(/only an http:\/\/ proxy/);
    expect(() => parseProxy('socks5://proxy.example:1080')).toThrow(/only an http:\/\/ proxy/);
    expect(() => parseProxy('http://u:secret@proxy.example:3128/path')).toThrow(/address alone.*\/\/\*\*\*@proxy/);
    expect(() => parseProxy('http://u:secret@proxy.example:3128/path')).not.toThrow(/secret/);
    expect(() => parseProxy('http://u:secret@bad host:3128')).not.toThrow(/secret/);
    // A password with a slash makes the URL unreadable: the message shows none of it.
    expect(() => parseProxy('http://u:sec/ret@proxy.example:3128')).toThrow('CRAWL_PROXY must be a proxy URL such as http://proxy.example:3128, got "http://***@proxy.example:3128" (a user or password with / # ? or % in it must have them percent-encoded: %2F %23 %3F %25)');
    expect(() => parseProxy('http://u:sec#ret@proxy.example:3128')).not.toThrow(/sec|ret/);
    expect(parseProxy('http://u:p@ss@proxy.example:3128').authorization).toBe(`Basic ${Buffer.from('u:p@ss').toString('base64')}`);
  });
});
