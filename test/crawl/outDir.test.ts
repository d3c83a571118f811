import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const cli = path.resolve(__dirname, '..', '..', 'bin', 'crawl');

describe('crawl run with an output directory it cannot use', () => {
  let dir: string;
  beforeAll(() => {
    if (!fs.existsSync(path.resolve(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js'))) throw new Error('build first: npm run build (make test does it)');
  });
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'out-dir-'));
    fs.writeFileSync(path.join(dir, 'urls.txt'), 'http://127.0.0.1:9/a.jpg\n');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  function run(out: string, ...more: string[]) {
    // A hang is the failure this guards against: the child is killed, not waited for.
    return spawnSync(process.execPath, [cli, 'run', path.join(dir, 'urls.txt'), '--out', out, ...more], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, TEMPORAL_ADDRESS: '', CRAWL_ALLOW_NETWORKS: '' } });
  }

  it('refuses a mistyped --allow-network before making the directory or keeping it for `crawl again`', () => {
    const out = path.join(dir, 'out');
    const r = run(out, '--allow-network', '127.0.0.1', '--allow-network', '999.1.1.1');
    expect(r.stderr).toContain('allow-network entry "999.1.1.1" is not a valid IP address');
    expect(r.status).toBe(1);
    expect(fs.existsSync(out)).toBe(false);
    // `crawl again` too, before it reads the store: with nothing to ask again, the typo went unsaid.
    fs.mkdirSync(path.join(out, 'store'), { recursive: true });
    const again = spawnSync(process.execPath, [cli, 'again', '--failed', '--allow-network', '999.1.1.1', '--out', out], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, TEMPORAL_ADDRESS: '', CRAWL_ALLOW_NETWORKS: '' } });
    expect([again.status, again.stdout]).toEqual([1, '']);
    expect(again.stderr).toContain('allow-network entry "999.1.1.1" is not a valid IP address');
  });

  it('says so and exits before starting anything, under a file', () => {
    fs.writeFileSync(path.join(dir, 'file'), '');
    const r = run(path.join(dir, 'file', 'out'));
    expect(r.stderr).toMatch(/cannot use the local directory .*\/file\/out\/store: .*\/file is a file, not a directory .*choose a writable directory: --out/);
    expect(r.status).toBe(1);
  });

  // Node's recursive mkdir spins there for ever at 100% CPU: `crawl run` hung with no word.
  (fs.existsSync('/proc/self') ? it : it.skip)('says so and exits under /proc, whose directories answer ENOENT for a child they cannot hold', () => {
    const r = run('/proc/no-such-crawl-out');
    expect(r.error).toBeUndefined(); // not killed by the timeout
    expect(r.stderr).toMatch(/cannot use the local directory \/proc\/no-such-crawl-out\/store: ENOENT.*choose a writable directory: --out/);
    expect(r.status).toBe(1);
  });
});
