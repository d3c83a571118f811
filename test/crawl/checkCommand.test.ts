import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { downloadedIndexPrefix, encodeFingerprints } from '../../src/pipeline/downloadedIndex';
import { sourceSegment } from '../../src/pipeline/keys';
import { LocalStore } from '../../src/pipeline/store';

const cli = path.resolve(__dirname, '..', '..', 'bin', 'crawl');

/** `crawl check` as an operator runs it: no server, no store unless one is named, only the files given. */
describe('crawl check', () => {
  let dir: string;
  beforeAll(() => {
    if (!fs.existsSync(path.resolve(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js'))) throw new Error('build first: npm run build (make test does it)');
  });
  beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'check-cmd-')); });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const check = (...args: string[]) => spawnSync(process.execPath, [cli, 'check', ...args], {
    cwd: dir, encoding: 'utf8', timeout: 30_000,
    // Nothing to reach: a server named here would not be asked.
    env: { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:9', CRAWL_DATA_DIR: path.join(dir, 'no-store'), CRAWL_ALLOW_NETWORKS: '' },
  });

  it('prints the table and the warnings, reads a CSV catalogue, and touches no store', () => {
    fs.writeFileSync(path.join(dir, 'urls.csv'), 'url,source,notes\nhttps://a.example/1.jpg,museum,"two\nlines"\nhttps://a.example/2.jpg,,\nnot a url,museum,\n');
    fs.writeFileSync(path.join(dir, 'sources.csv'), 'Name,Rate\nmuseum,0.5\n');
    const r = check('urls.csv', '--catalog', 'sources.csv');
    expect(r.status).toBe(0);
    expect(r.stdout.split('\n').slice(0, 3)).toEqual([
      expect.stringMatching(/^SOURCE +URLS +RATE\/S +TAKES +RATE FROM$/),
      expect.stringMatching(/^museum +1 +0\.5 +~2s +catalogue rate$/),
      expect.stringMatching(/^a\.example +1 +1 +~1s +no catalogue entry: the default 1\/s$/),
    ]);
    expect(r.stdout).toContain('1 bad line(s) would be skipped (above)');
    expect(r.stderr).toContain('crawl: urls.csv line 5: not a URL: "not a url" (skipped)');
    expect(r.stderr).toContain('a host is in more than one source: a.example (in "museum", "a.example")');
    expect(fs.existsSync(path.join(dir, 'no-store'))).toBe(false);

    const json = check('urls.csv', '--catalog', 'sources.csv', '--json');
    expect(json.status).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ seconds: 2, badLines: 1, duplicates: 0, sources: [{ source: 'museum', urls: 1, rate: 0.5, rateFrom: 'rate' }, { source: 'a.example', rateFrom: 'default' }] });
  });

  it('warns of URLs on addresses the network guard refuses, unless --allow-network or CRAWL_ALLOW_NETWORKS opens them', () => {
    fs.writeFileSync(path.join(dir, 'urls.txt'), 'http://10.0.0.7:8080/a.jpg\nhttp://10.0.0.7:8080/b.jpg\nhttps://a.example/1.jpg\n');
    const closed = check('urls.txt');
    expect(closed.status).toBe(0);
    expect(closed.stderr).toContain('crawl: 2 URL(s) are on addresses the network guard refuses, and would be recorded as refused without being asked for: '
      + '10.0.0.7:8080 (2 URL(s): address 10.0.0.7 is private). `crawl run` crawls them given --allow-network 10.0.0.7 (hosts you trust only)');
    expect(JSON.parse(check('urls.txt', '--json').stdout).warnings).toEqual([expect.stringMatching(/^2 URL\(s\) are on addresses the network guard refuses/)]);
    expect(check('urls.txt', '--allow-network', '10.0.0.0/8').stderr).not.toContain('network guard');
    const env = { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:9', CRAWL_ALLOW_NETWORKS: '10.0.0.7', CRAWL_DATA_DIR: path.join(dir, 'no-store') };
    const opened = spawnSync(process.execPath, [cli, 'check', 'urls.txt'], { cwd: dir, encoding: 'utf8', timeout: 30_000, env });
    expect([opened.status, opened.stderr]).toEqual([0, '']);
    const bad = check('urls.txt', '--allow-network', '10.0.0.0/99');
    expect([bad.status, bad.stderr]).toEqual([1, expect.stringContaining('allow-network entry "10.0.0.0/99" is not a valid CIDR range')]);
  });

  it('with --resolve, warns of host names that do not resolve (RFC 6761 .invalid never does), and only then looks them up', () => {
    fs.writeFileSync(path.join(dir, 'urls.txt'), 'http://no-such-host.invalid/a.jpg\nhttp://no-such-host.invalid/b.jpg\nhttp://10.0.0.7/c.jpg\n');
    const r = check('urls.txt', '--resolve', '--allow-network', '10.0.0.7');
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(/^crawl: 2 URL\(s\) are on host names that do not resolve here: no-such-host\.invalid \(2 URL\(s\): /m);
    expect(JSON.parse(check('urls.txt', '--resolve', '--json', '--allow-network', '10.0.0.7').stdout).warnings).toEqual([expect.stringContaining('no-such-host.invalid (2 URL(s)')]);
    // From the files alone without it.
    expect([check('urls.txt', '--allow-network', '10.0.0.7').stderr]).toEqual(['']);
  });

  it('counts what the store of an earlier `crawl run --out DIR` holds already, given that directory', async () => {
    const store = new LocalStore(path.join(dir, 'crawl-out', 'store'));
    await store.put(`${downloadedIndexPrefix(sourceSegment('a.example'))}0123456789abcdef-0.fp64`, encodeFingerprints(['https://a.example/1.jpg']), 'application/octet-stream');
    await store.put('records/a.example/0123456789abcdef-0-g1.ndjson', `${JSON.stringify({ url: 'https://a.example/1.jpg', source: 'a.example', outcome: 'done' })}\n`, 'application/x-ndjson');
    fs.writeFileSync(path.join(dir, 'urls.txt'), 'https://a.example/1.jpg\nhttps://a.example/2.jpg\nhttps://a.example/3.jpg\n');
    const r = check('urls.txt', '--out', 'crawl-out');
    expect(r.status).toBe(0);
    expect(r.stdout.split('\n').slice(0, 2)).toEqual([
      expect.stringMatching(/^SOURCE +URLS +DOWNLOADED +RATE\/S +TAKES +RATE FROM$/),
      expect.stringMatching(/^a\.example +3 +1 +1 +~2s +no catalogue entry/),
    ]);
    expect(r.stdout).toContain(`1 of them downloaded before into the local directory ${path.join(fs.realpathSync(dir), 'crawl-out', 'store')}, which a start leaves out`);
    expect(JSON.parse(check('urls.txt', '--data-dir', 'crawl-out', '--json').stdout)).toMatchObject({ seconds: 2, sources: [{ source: 'a.example', urls: 3, downloadedBefore: 1 }] });
    const typo = check('urls.txt', '--out', 'crawl-ot');
    expect(typo.status).toBe(1);
    expect(typo.stderr).toContain('there is no local directory');
    expect(typo.stderr).toContain('here: --out crawl-out');
    const both = check('urls.txt', '--out', 'crawl-out', '--data-dir', 'crawl-out');
    expect(both.status).toBe(1);
    expect(both.stderr).toContain('--data-dir and --out both name the store: give one');
  });

  it('warns only of the refused URLs a start would still crawl, not of those the store downloaded before', async () => {
    const store = new LocalStore(path.join(dir, 'crawl-out', 'store'));
    const origin = '10.0.0.7:8080';
    await store.put(`${downloadedIndexPrefix(sourceSegment(origin))}0123456789abcdef-0.fp64`, encodeFingerprints(['http://10.0.0.7:8080/a.jpg', 'http://10.0.0.7:8080/b.jpg']), 'application/octet-stream');
    fs.writeFileSync(path.join(dir, 'urls.txt'), 'http://10.0.0.7:8080/a.jpg\nhttp://10.0.0.7:8080/b.jpg\nhttp://10.0.0.7:8080/c.jpg\n');
    // An --allow-network crawl of all three earlier, then one more URL: only that one would be refused.
    const r = check('urls.txt', '--out', 'crawl-out');
    expect(r.status).toBe(0);
    expect(r.stderr).toContain('crawl: 1 URL(s) are on addresses the network guard refuses, and would be recorded as refused without being asked for: 10.0.0.7:8080 (1 URL(s): address 10.0.0.7 is private)');
    fs.writeFileSync(path.join(dir, 'urls.txt'), 'http://10.0.0.7:8080/a.jpg\nhttp://10.0.0.7:8080/b.jpg\n');
    expect(check('urls.txt', '--out', 'crawl-out').stderr).toBe('');
  });

  it('exits 1 when no line can be crawled', () => {
    fs.writeFileSync(path.join(dir, 'bad.txt'), 'not a url\n');
    const r = check('bad.txt');
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('bad.txt has no URL that can be crawled');
  });
});
