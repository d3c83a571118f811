import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { endedRunsHint } from './connect';

describe('reaching no server after a crawl run', () => {
  let cwd: string;
  beforeEach(() => { cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'ended-runs-')); });
  afterEach(() => fs.rmSync(cwd, { recursive: true, force: true }));

  it('names the way back to the crawls whose embedded server kept its data here', () => {
    expect(endedRunsHint(cwd)).toBe('');
    const serverOf = (dir: string) => {
      fs.mkdirSync(path.join(cwd, dir, 'temporal'), { recursive: true });
      fs.writeFileSync(path.join(cwd, dir, 'temporal', 'temporal.sqlite'), '');
    };
    serverOf('crawl-out');
    // A store without a server of its own (a crawl started against another server) is no such crawl.
    fs.mkdirSync(path.join(cwd, 'workers-data', 'store', 'records'), { recursive: true });
    expect(endedRunsHint(cwd)).toBe('; the embedded server of the crawl in crawl-out (`crawl run --out`, the demo) ended with it, and `crawl dev-server --data-dir crawl-out/temporal` serves that crawl again');
    // The latest run first (the one most likely meant), whatever the names.
    serverOf('b-out');
    fs.utimesSync(path.join(cwd, 'b-out', 'temporal', 'temporal.sqlite'), new Date('2026-01-01'), new Date('2026-01-01'));
    expect(endedRunsHint(cwd)).toMatch(/the crawl in crawl-out .* --data-dir crawl-out\/temporal` serves that crawl again \(other crawls' output here: b-out\)$/);
  });
});
