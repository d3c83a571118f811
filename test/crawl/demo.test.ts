import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startDemoSite } from '../../src/demo/demo';
import { ROOT, runCli } from '../support/cli';

/**
 * `make demo`, the README's first command, as a newcomer runs it: on the embedded default (no
 * TEMPORAL_ADDRESS), into a directory of its own, and then again with one of the two flags its
 * last line suggests.
 */

const readLines = (file: string) => fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);

describe('crawl demo', () => {
  let out: string;
  beforeAll(() => {
    if (!fs.existsSync(path.join(ROOT, 'dist', 'src', 'cli', 'main.js'))) throw new Error('build first: npm run build (make test does it)');
  });
  beforeEach(() => { out = fs.mkdtempSync(path.join(os.tmpdir(), 'demo-')); });
  afterEach(() => fs.rmSync(out, { recursive: true, force: true }));

  it('crawls its four sources, halts broken, and a second run with --stop-halted takes up that crawl instead of starting another', async () => {
    const env = { TEMPORAL_ADDRESS: '', CRAWL_LOG_LEVEL: 'warn' };
    const first = await runCli(['demo', '--out', out], env);
    expect(first.stderr).toContain('demo-manifest.ndjson line 353: not valid JSON (skipped)');
    expect(first.stderr).toContain('demo-manifest.ndjson line 354: scheme ftp: not allowed (http and https only) (skipped)');
    expect(first.stdout).toContain('demo: done; "broken" halted as intended');
    expect(first.code).toBe(0);
    const row = /^broken\s+halted\s.*?(\d+)\s+(\d+)\s+the last 50 requests all failed/m.exec(first.stdout);
    expect(row).not.toBeNull();
    expect(Number(row![1]) + Number(row![2])).toBeGreaterThanOrEqual(50); // errors and retries: every try failed

    const metadata = path.join(out, 'metadata.ndjson');
    const records = readLines(metadata);
    const tally = (source: string) => records.filter((r) => r.source === source).reduce<Record<string, number>>((t, r) => ({ ...t, [r.outcome as string]: (t[r.outcome as string] ?? 0) + 1 }), {});
    expect(new Set(records.map((r) => r.url)).size).toBe(records.length);
    expect(tally('museum')).toEqual({ done: 40, linkrot: 1, robots: 1 });
    expect(tally('photos')).toEqual({ done: 150 });
    expect(tally('throttled')).toEqual({ done: 100 });
    // Halted: its URLs wait for an operator, unrecorded, but for any that used up their tries
    // first (one, in a run whose retries came early and cooled it twice).
    expect(Object.keys(tally('broken')).filter((outcome) => outcome !== 'error')).toEqual([]);
    const withRights = records.filter((r) => r.artist === 'Demo Photographer');
    expect(withRights.length).toBeGreaterThan(0);
    for (const r of withRights) expect(r).toMatchObject({ copyright: 'CC BY 4.0, Demo Photographer', licenseUrl: 'https://creativecommons.org/licenses/by/4.0/' });
    const thumbnails = (fs.readdirSync(path.join(out, 'store', 'thumbnails'), { recursive: true }) as string[]).filter((f) => f.endsWith('.jpg'));
    expect(thumbnails).toHaveLength(290);

    // Its site is served again on the same port: the same URLs, so the crawl above is the one
    // the flag acts on. (On a new port it crawled 352 new URLs, 584 records in all, and broken's
    // halted URLs pointed at a port nobody served.)
    const manifest = fs.readFileSync(path.join(out, 'site', 'demo-manifest.ndjson'), 'utf8');
    const second = await runCli(['demo', '--out', out, '--stop-halted'], env);
    expect(second.code).toBe(0);
    expect(readLines(metadata)).toHaveLength(records.length);
    expect(second.stdout).toMatch(/^broken\s+stopped\s.*\s\d+\/60\s/m); // its 60 URLs, not 120
    expect(fs.readFileSync(path.join(out, 'site', 'demo-manifest.ndjson'), 'utf8')).toBe(manifest);
    expect(second.stderr).not.toContain('is taken');
    expect(second.stdout).toContain(`demo: ${out} holds an earlier demo: this run takes up its crawl`);
  }, 400_000);

  it('says so when the earlier port is taken, and serves on another', async () => {
    const site = await startDemoSite(out);
    const port = site.origins[0]!.port;
    expect(site.earlier).toBeUndefined();
    await site.stop();
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.3', resolve));
    let moved: number;
    try {
      const again = await startDemoSite(out);
      moved = again.origins[0]!.port;
      await again.stop();
      expect(again.earlier).toEqual({ port, movedTo: again.origins[0]!.port });
      expect(again.origins[0]!.port).not.toBe(port);
      expect(fs.readFileSync(again.manifest, 'utf8')).toContain(`http://127.0.0.1:${again.origins[0]!.port}/img/0.jpg`);
    } finally {
      squatter.close();
    }
    const third = await startDemoSite(out);
    await third.stop();
    expect(third.earlier).toEqual({ port: moved });
  });
});
