import { execFile } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { pipelineConfigFromEnv } from '../../src/pipeline/config';
import { Fetcher } from '../../src/pipeline/fetcher';

/**
 * A site on 127.0.0.1 whose certificate no CA vouches for (test/fixtures/tls: made with
 * `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 36500
 * -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1,DNS:localhost`).
 */
const ROOT = path.resolve(__dirname, '..', '..');
const TLS = path.join(ROOT, 'test', 'fixtures', 'tls');
const execFileP = promisify(execFile);
const cert = fs.readFileSync(path.join(TLS, 'cert.pem'));
const key = fs.readFileSync(path.join(TLS, 'key.pem'));

describe('TLS verification (real undici, https origin on 127.0.0.1)', () => {
  let server: https.Server;
  let base = '';
  let requests = 0;
  beforeAll(async () => {
    server = https.createServer({ cert, key }, (_req, res) => {
      requests += 1;
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': 3 });
      res.end('abc');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('serves a client that trusts its certificate (the site itself works)', async () => {
    const status = await new Promise<number | undefined>((resolve, reject) => {
      https.get(`${base}/x.jpg`, { ca: cert }, (res) => { res.resume(); resolve(res.statusCode); }).on('error', reject);
    });
    expect(status).toBe(200);
    expect(requests).toBe(1);
  });

  it('refuses a certificate it cannot verify, before any request is sent, also on a connection opened ahead', async () => {
    const fetcher = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }));
    const before = requests;
    try {
      const res = await fetcher.fetch(`${base}/x.jpg`);
      expect(res).toMatchObject({ ok: false, failure: 'network', reason: expect.stringMatching(/SELF_SIGNED_CERT|self[- ]signed/i) });
      fetcher.preconnect(`${base}/y.jpg`);
      await new Promise((r) => setTimeout(r, 100));
      const again = await fetcher.fetch(`${base}/y.jpg`);
      expect(again).toMatchObject({ ok: false, failure: 'network', reason: expect.stringMatching(/SELF_SIGNED_CERT|self[- ]signed/i) });
      expect(requests).toBe(before);
    } finally {
      await fetcher.close();
    }
  });

  it('keeps verifying when NODE_TLS_REJECT_UNAUTHORIZED=0 is in the environment', async () => {
    // Node reads the variable from the real environment, which a jest test cannot set for
    // itself: the fetch runs in a child process (the build's fetcher, as `bin/crawl` runs it).
    const fetcherJs = path.join(ROOT, 'dist', 'src', 'pipeline', 'fetcher.js');
    const configJs = path.join(ROOT, 'dist', 'src', 'pipeline', 'config.js');
    if (!fs.existsSync(fetcherJs)) throw new Error('build first: npm run build (make test does it)');
    const script = `
      const { Fetcher } = require(${JSON.stringify(fetcherJs)});
      const { pipelineConfigFromEnv } = require(${JSON.stringify(configJs)});
      const f = new Fetcher(pipelineConfigFromEnv({ allowNetworks: ['127.0.0.0/8'] }));
      f.fetch(${JSON.stringify(`${base}/z.jpg`)}).then(async (r) => { console.log(JSON.stringify(r)); await f.close(); });`;
    const before = requests;
    const { stdout } = await execFileP(process.execPath, ['-e', script], { env: { ...process.env, NODE_TLS_REJECT_UNAUTHORIZED: '0' } });
    expect(JSON.parse(stdout)).toMatchObject({ ok: false, failure: 'network', reason: expect.stringMatching(/SELF_SIGNED_CERT|self[- ]signed/i) });
    expect(requests).toBe(before);
  });
});
