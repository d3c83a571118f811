import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Origin } from '../../src/demo/origin';
import { monitorWorkflowId } from '../../src/workflows/monitorState';
import type { MonitorStats } from '../../src/workflows/monitorStats';
import { createLocalEnv } from '../support/temporal';
import { CLI, ROOT, started } from '../support/cli';
import { imageOrigin } from '../support/origin';
import { readRecords } from '../support/records';
import { tlsProxy } from '../support/tlsProxy';

const CERTS = path.join(ROOT, 'test', 'fixtures', 'tls', 'temporal');
const cert = (name: string) => path.join(CERTS, name);

const crawl = (args: string[], env: NodeJS.ProcessEnv) => started(process.execPath, [CLI, ...args], env);

describe('a Temporal server behind mTLS (TEMPORAL_TLS_* as the Temporal CLI reads them)', () => {
  let env: TestWorkflowEnvironment;
  let proxy: Awaited<ReturnType<typeof tlsProxy>>;
  let origin: Origin;
  beforeAll(async () => {
    if (!fs.existsSync(path.join(ROOT, 'dist', 'src', 'cli', 'main.js'))) throw new Error('build first: npm run build (make test does it)');
    env = await createLocalEnv();
    proxy = await tlsProxy(env.address, { cert: fs.readFileSync(cert('server.pem')), key: fs.readFileSync(cert('server.key')), ca: fs.readFileSync(cert('ca.pem')) });
    origin = await imageOrigin();
  });
  afterAll(async () => {
    await origin?.stop();
    await proxy?.close();
    await env?.teardown();
  });

  const mtls = () => ({
    TEMPORAL_ADDRESS: proxy.address,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: cert('ca.pem'),
    TEMPORAL_TLS_CLIENT_CERT_PATH: cert('client.pem'),
    TEMPORAL_TLS_CLIENT_KEY_PATH: cert('client.key'),
  });

  it('crawls with `crawl worker`, `crawl start` and `crawl run` connected through it, and `crawl status` reads it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mtls-'));
    const manifest = path.join(dir, 'urls.txt');
    fs.writeFileSync(manifest, [1, 2, 3].map((n) => `http://127.0.0.1:${origin.port}/${n}.jpg\n`).join(''));
    // The network opened for `start` too (CRAWL_ALLOW_NETWORKS), or it warns of the URLs on loopback.
    const shared = { ...mtls(), CRAWL_DATA_DIR: path.join(dir, 'data'), CRAWL_ALLOW_NETWORKS: '127.0.0.0/8' };
    const worker = crawl(['worker'], shared);
    try {
      const start = await crawl(['start', manifest], shared).done;
      expect({ code: start.code, stderr: start.stderr }).toEqual({ code: 0, stderr: '' });
      const source = `127.0.0.1:${origin.port}`;
      const final = (await env.client.workflow.getHandle(monitorWorkflowId(source)).result()) as MonitorStats;
      expect(final.counts.done).toBe(3);
      expect(readRecords(path.join(dir, 'data')).map((r) => r.outcome)).toEqual(['done', 'done', 'done']);
      const status = await crawl(['status', '--json'], shared).done;
      expect(status.code).toBe(0);
      expect(JSON.parse(status.stdout).sources).toContainEqual(expect.objectContaining({ source, workflowStatus: 'COMPLETED' }));
      // `crawl run` on the operator's server and workers (its store theirs): through the proxy as well.
      const more = path.join(dir, 'more.txt');
      fs.writeFileSync(more, [4, 5].map((n) => `http://127.0.0.1:${origin.port}/${n}.jpg\n`).join(''));
      const run = await crawl(['run', more, '--out', path.join(dir, 'data')], shared).done;
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/finished\s+\S+\s+\S+\s+2\/2\s+2\s/);
      expect(run.stdout).toContain('metadata.ndjson (5 records)');
      // The worker's own connections (its native client) came through the proxy too, not only the CLI's.
      expect(proxy.seen.authorized).toBeGreaterThanOrEqual(5);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.done;
    }
  });

  it('says it cannot reach the server when the client certificate is missing, and refuses half a pair before connecting', async () => {
    const refusedBefore = proxy.seen.refused.length;
    const { TEMPORAL_TLS_CLIENT_CERT_PATH: _c, TEMPORAL_TLS_CLIENT_KEY_PATH: _k, ...serverOnly } = mtls();
    const noCert = await crawl(['status'], serverOnly).done;
    expect(noCert.code).toBe(1);
    expect(noCert.stderr).toMatch(new RegExp(`^crawl: cannot reach the Temporal server at ${proxy.address}: .*set TEMPORAL_ADDRESS \\(and TEMPORAL_TLS_\\* or TEMPORAL_API_KEY`));
    expect(proxy.seen.refused.length).toBeGreaterThan(refusedBefore);
    const half = await crawl(['status'], { ...serverOnly, TEMPORAL_TLS_CLIENT_CERT_PATH: cert('client.pem') }).done;
    expect(half).toMatchObject({ code: 1, stderr: 'crawl: TEMPORAL_TLS_CLIENT_CERT_PATH (or _DATA) and TEMPORAL_TLS_CLIENT_KEY_PATH (or _DATA) go together: mTLS needs the certificate and its key\n' });
  });
});
