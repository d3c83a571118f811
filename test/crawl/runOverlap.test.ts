import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RUNS_DIR } from '../../src/crawl/runningCrawls';
import { imageOrigin, type Origin } from '../support/origin';

const cli = path.resolve(__dirname, '..', '..', 'bin', 'crawl');

/**
 * Two `crawl run`s on servers of their own cannot see each other's monitors: a site in both
 * manifests got both rates at once. The later one does not start.
 */
describe('two crawl runs on one machine with a site in common', () => {
  let dir: string;
  let origin: Origin;
  beforeAll(async () => {
    if (!fs.existsSync(path.resolve(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js'))) throw new Error('build first: npm run build (make test does it)');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'run-overlap-'));
    origin = await imageOrigin();
  });
  afterAll(async () => {
    await origin.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const env = { ...process.env, TEMPORAL_ADDRESS: '', CRAWL_ALLOW_NETWORKS: '' };
  const manifest = (name: string, paths: string[]) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, paths.map((p) => `${JSON.stringify({ url: origin.url(p), source: 'museum' })}\n`).join(''));
    return file;
  };
  const args = (m: string, out: string) => ['run', m, '--catalog', path.join(dir, 'catalog.json'), '--out', path.join(dir, out), '--allow-network', '127.0.0.1'];
  const registered = (out: string) => fs.readdirSync(RUNS_DIR).some((n) => {
    try {
      return (JSON.parse(fs.readFileSync(path.join(RUNS_DIR, n), 'utf8')) as { out: string }).out === path.join(dir, out);
    } catch {
      return false;
    }
  });

  // Not spawnSync: the origin answers from this process.
  const runCli = (a: string[]) => new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [cli, ...a], { env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });

  it('refuses the later one before it starts anything, saying which run has which sites; once the first has ended it runs', async () => {
    fs.writeFileSync(path.join(dir, 'catalog.json'), JSON.stringify([{ name: 'museum', rate: 2 }]));
    const first = spawn(process.execPath, [cli, ...args(manifest('first.ndjson', Array.from({ length: 16 }, (_, i) => `/first/${i}.jpg`)), 'out1')], { env, stdio: 'ignore' });
    const firstExit = new Promise<number | null>((resolve) => first.on('exit', resolve));
    try {
      for (let i = 0; i < 300 && !(fs.existsSync(RUNS_DIR) && registered('out1')); i++) await new Promise((r) => setTimeout(r, 100));
      expect(registered('out1')).toBe(true);
      // Another source name, other URLs, the same site.
      const second = manifest('second.ndjson', Array.from({ length: 4 }, (_, i) => `/second/${i}.jpg`));
      const refused = await runCli(args(second, 'out2'));
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain(`crawl: another crawl run on this machine (pid ${first.pid}, --out ${path.join(dir, 'out1')}, since `);
      expect(refused.stderr).toContain(`is crawling 1 of this manifest's site(s): 127.0.0.1:${new URL(origin.url('/')).port}. Each run holds a site to its rate on its own`);
      expect(origin.hits('/second/')).toHaveLength(0);
      // Its own note is gone with it.
      expect(registered('out2')).toBe(false);
      expect(await firstExit).toBe(0);
      expect(registered('out1')).toBe(false);
      expect(origin.hits('/first/')).toHaveLength(16);
      const later = await runCli(args(second, 'out2'));
      expect([later.status, later.stderr]).toEqual([0, expect.not.stringContaining('another crawl run on this machine')]);
      expect(origin.hits('/second/')).toHaveLength(4);
    } finally {
      // Ctrl-C, not SIGKILL, which would leave its server running for the next test.
      if (first.exitCode === null) {
        first.kill('SIGINT');
        await firstExit;
      }
    }
  }, 120_000);
});
