import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { overlapRefusal, RunRegistration } from './runningCrawls';

describe('the crawl runs of this machine and their sites', () => {
  let dir: string;
  beforeEach(() => { dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'runs-')), 'runs'); });
  afterEach(() => fs.rmSync(path.dirname(dir), { recursive: true, force: true }));
  const quiet = () => { throw new Error('no warning expected'); };

  it('tells the later of two runs with a site in common, not the earlier one, nor a run of other sites', () => {
    const first = RunRegistration.create({ out: '/crawls/a', server: '127.0.0.1:7233' }, ['museum.org', 'photos.org'], quiet, dir)!;
    const other = RunRegistration.create({ out: '/crawls/b', server: '127.0.0.1:40001' }, ['news.org'], quiet, dir)!;
    const second = RunRegistration.create({ out: '/crawls/c', server: '127.0.0.1:40002' }, ['photos.org', 'news.org', 'museum.org'], quiet, dir)!;
    expect(first.earlierOverlap()).toBeUndefined();
    expect(other.earlierOverlap()).toBeUndefined();
    const seen = second.earlierOverlap()!;
    // Either earlier run may be named; each has sites of this one.
    expect(['/crawls/a', '/crawls/b']).toContain(seen.out);
    expect(seen.pid).toBe(process.pid);
    first.remove();
    other.remove();
    expect(second.earlierOverlap()).toBeUndefined();
    expect(fs.readdirSync(dir)).toHaveLength(1);
    // Runs on one server share their sources' monitors.
    const sameServer = RunRegistration.create({ out: '/crawls/d', server: '127.0.0.1:40002' }, ['museum.org'], quiet, dir)!;
    expect(sameServer.earlierOverlap()).toBeUndefined();
    // The directory is open to every user's runs, as /tmp is.
    expect(fs.statSync(dir).mode & 0o7777).toBe(0o1777);
  });

  it('leaves out, and removes, the note of a run that ended without removing it (killed), and of a pid reused since', () => {
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    fs.mkdirSync(dir, { recursive: true });
    const note = (name: string, pid: number, procStart: string | null) =>
      fs.writeFileSync(path.join(dir, name), JSON.stringify({ pid, procStart, out: `/crawls/${name}`, server: '127.0.0.1:7233', registeredMs: 0, seq: 0, origins: ['museum.org'] }));
    note('dead.json', dead, null);
    note('reused.json', process.pid, '1');
    const run = RunRegistration.create({ out: '/crawls/new', server: '127.0.0.1:40003' }, ['museum.org'], quiet, dir)!;
    expect(run.earlierOverlap()).toBeUndefined();
    expect(fs.readdirSync(dir)).toHaveLength(1);
  });

  it('says it cannot note a run when the directory cannot be made, and lets the run go on', () => {
    fs.mkdirSync(path.dirname(dir), { recursive: true });
    fs.writeFileSync(dir, 'a file where the directory would be');
    const warned: string[] = [];
    expect(RunRegistration.create({ out: '/crawls/a', server: '127.0.0.1:7233' }, ['museum.org'], (m) => warned.push(m), dir)).toBeUndefined();
    expect(warned).toEqual([expect.stringMatching(/^cannot note this run's sites in .*runs \(.*\): another crawl run on this machine with the same sites would not be told of this one/)]);
  });

  it('names the run, its output and a few of the sites, and says what to do', () => {
    const text = overlapRefusal({ pid: 4711, out: '/crawls/a', registeredMs: Date.UTC(2026, 11, 3, 17, 40), shown: ['a.org', 'b.org'], count: 7 });
    expect(text).toBe('another crawl run on this machine (pid 4711, --out /crawls/a, since 2026-12-03T17:40:00.000Z) is crawling 7 of this manifest\'s site(s): a.org, b.org and 5 more. ' +
      'Each run holds a site to its rate on its own, so the two together would send it twice what it bears. Nothing was started: run this manifest once that run has ended ' +
      '(into its --out, /crawls/a, to keep one output: the URLs it crawled are not asked for again)');
  });
});
