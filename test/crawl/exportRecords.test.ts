import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { StoreRecorder } from '../../src/activities/storeRecorder';
import { exportedLine, exportRecords, exportRecordsToFile, outcomesOption } from '../../src/crawl/exportRecords';
import { LocalStore } from '../../src/pipeline/store';

/** `crawl export --data-dir DIR ARGS...` as an operator runs it. */
function runExport(dataDir: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cli = path.resolve(__dirname, '..', '..', 'bin', 'crawl');
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, 'export', '--data-dir', dataDir, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('exporting metadata records from the store', () => {
  let root: string;
  beforeEach(() => { root = fs.mkdtempSync(path.join(os.tmpdir(), 'export-')); });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  async function crawled(store: LocalStore): Promise<void> {
    const rec = new StoreRecorder(store);
    await rec.write('museum.example', 'b2-g1', [{ url: 'https://m/3.jpg', outcome: 'done' }]);
    await rec.write('museum.example', 'b1-g1', [{ url: 'https://m/1.jpg', outcome: 'done' }, { url: 'https://m/2.jpg', outcome: 'linkrot' }]);
    // A retried unit that found nothing left to record writes an empty file.
    await rec.write('museum.example', 'b1-g2', []);
    // ':' is unsafe in a key: this source's directory name carries a hash, and must still be found by name.
    await rec.write('host:8080', 'b1-g1', [{ url: 'http://host:8080/a.jpg', outcome: 'content' }]);
  }

  it('joins every record file into one NDJSON stream in key order, one line per record', async () => {
    const store = new LocalStore(root);
    await crawled(store);
    let text = '';
    const summary = await exportRecords(store, (t) => { text += t; });
    const urls = text.split('\n').filter(Boolean).map((l) => JSON.parse(l).url);
    expect(urls.sort()).toEqual(['http://host:8080/a.jpg', 'https://m/1.jpg', 'https://m/2.jpg', 'https://m/3.jpg']);
    expect(text.endsWith('\n')).toBe(true);
    expect(summary).toEqual({ records: 4, units: 3, sourcesWithoutRecords: [], superseded: 0 });
  });

  it('exports the named sources only, and names those that have no records', async () => {
    const store = new LocalStore(root);
    await crawled(store);
    let text = '';
    const summary = await exportRecords(store, (t) => { text += t; }, ['host:8080', 'no.such.source', 'host:8080']);
    expect(text.split('\n').filter(Boolean).map((l) => JSON.parse(l).url)).toEqual(['http://host:8080/a.jpg']);
    expect(summary.sourcesWithoutRecords).toEqual(['no.such.source']);
    text = '';
    await exportRecords(store, (t) => { text += t; }, ['museum.example']);
    expect(text.split('\n').filter(Boolean).map((l) => JSON.parse(l).url)).toEqual(['https://m/1.jpg', 'https://m/2.jpg', 'https://m/3.jpg']);
  });

  it('keeps one record per URL of a source, the done or else latest one, unless every record is asked for', async () => {
    const store = new LocalStore(root);
    const rec = new StoreRecorder(store);
    const at = (s: number) => `2026-11-27T10:00:0${s}.000Z`;
    // The first manifest's chunk: two URLs answered with a wall's page; the source halted.
    await rec.write('wall.example', 'm1-c0-g1', [
      { url: 'https://wall/1.jpg', source: 'wall.example', outcome: 'done', recordedAt: at(0) },
      { url: 'https://wall/2.jpg', source: 'wall.example', outcome: 'content', reason: 'not an image: an HTML page', recordedAt: at(1) },
      { url: 'https://wall/3.jpg', source: 'wall.example', outcome: 'content', reason: 'not an image: an HTML page', recordedAt: at(2) },
    ]);
    // A second manifest asked for those two again (its chunk sorts first); one came, one is gone.
    await rec.write('wall.example', 'a0-c0-g1', [
      { url: 'https://wall/2.jpg', source: 'wall.example', outcome: 'done', recordedAt: at(5) },
      { url: 'https://wall/3.jpg', source: 'wall.example', outcome: 'linkrot', reason: 'http 404', recordedAt: at(6) },
    ]);
    // The same URL under another source is that source's own record.
    await rec.write('other', 'b1-g1', [{ url: 'https://wall/3.jpg', source: 'other', outcome: 'content', recordedAt: at(1) }]);
    let text = '';
    const inspected: string[] = [];
    const summary = await exportRecords(store, (t) => { text += t; }, [], { inspect: (t) => inspected.push(t) });
    const records = text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { url: string; source: string; outcome: string });
    expect(records.map((r) => `${r.source} ${r.url} ${r.outcome}`).sort()).toEqual([
      'other https://wall/3.jpg content', 'wall.example https://wall/1.jpg done', 'wall.example https://wall/2.jpg done', 'wall.example https://wall/3.jpg linkrot',
    ]);
    expect(summary).toEqual({ records: 4, units: 3, sourcesWithoutRecords: [], superseded: 2 });
    expect(inspected.join('')).toBe(text);

    text = '';
    const all = await exportRecords(store, (t) => { text += t; }, ['wall.example'], { allRecords: true });
    expect(text.split('\n').filter(Boolean)).toHaveLength(5);
    expect(all.superseded).toBe(0);
  });

  it('exports only what was written since a time, each URL still keeping its done or else latest record', async () => {
    const store = new LocalStore(root);
    const rec = new StoreRecorder(store);
    const at = (s: number) => `2026-11-27T10:00:0${s}.000Z`;
    const writtenAt = (source: string, unit: string, ms: number) => {
      const when = new Date(ms);
      fs.utimesSync(path.join(root, 'records', source, `${unit}.ndjson`), when, when);
    };
    const t0 = Date.parse('2026-11-27T10:00:00Z');
    await rec.write('wall.example', 'm1-c0-g1', [
      { url: 'https://wall/1.jpg', source: 'wall.example', outcome: 'done', recordedAt: at(0) },
      { url: 'https://wall/2.jpg', source: 'wall.example', outcome: 'content', recordedAt: at(1) },
      { url: 'https://wall/3.jpg', source: 'wall.example', outcome: 'content', recordedAt: at(2) },
    ]);
    writtenAt('wall.example', 'm1-c0-g1', t0);
    // Asked again later: 2 came; 1 (done before) met a page this time, and stays done.
    await rec.write('wall.example', 'a0-c0-g1', [
      { url: 'https://wall/2.jpg', source: 'wall.example', outcome: 'done', recordedAt: at(5) },
      { url: 'https://wall/1.jpg', source: 'wall.example', outcome: 'content', recordedAt: at(6) },
    ]);
    writtenAt('wall.example', 'a0-c0-g1', t0 + 3_600_000);
    // A source with nothing new is not read at all.
    await rec.write('quiet.example', 'b1-g1', [{ url: 'https://quiet/1.jpg', source: 'quiet.example', outcome: 'done', recordedAt: at(0) }]);
    writtenAt('quiet.example', 'b1-g1', t0);
    const gets: string[] = [];
    const counted = Object.assign(Object.create(store) as LocalStore, { get: (key: string) => { gets.push(key); return store.get(key); } });

    let text = '';
    const since = t0 + 60_000;
    const summary = await exportRecords(counted, (t) => { text += t; }, [], { since });
    expect(text.trim().split('\n').map((l) => JSON.parse(l)).map((r) => `${r.url} ${r.outcome}`)).toEqual(['https://wall/2.jpg done']);
    expect(summary).toMatchObject({ records: 1, units: 1, superseded: 1, olderFiles: 2 });
    expect(Math.abs(summary.recent!.newest - (t0 + 3_600_000))).toBeLessThanOrEqual(1);
    expect(gets.filter((k) => k.includes('quiet'))).toEqual([]);

    // Every record: only the new file's, none of the older ones read.
    text = '';
    gets.length = 0;
    const all = await exportRecords(counted, (t) => { text += t; }, [], { since, allRecords: true });
    expect(text.trim().split('\n')).toHaveLength(2);
    expect(gets).toEqual(['records/wall.example/a0-c0-g1.ndjson']);
    expect(all).toMatchObject({ records: 2, units: 1, olderFiles: 2 });

    // Since before everything: the same as no --since.
    text = '';
    await exportRecords(store, (t) => { text += t; }, [], { since: t0 - 1 });
    expect(text.trim().split('\n').map((l) => JSON.parse(l)).map((r) => `${r.url} ${r.outcome}`).sort()).toEqual([
      'https://quiet/1.jpg done', 'https://wall/1.jpg done', 'https://wall/2.jpg done', 'https://wall/3.jpg content',
    ]);
  });

  it('moves a cursor file on only after a whole export, and the next export gives what is new since', async () => {
    const store = new LocalStore(path.join(root, 'store'));
    const rec = new StoreRecorder(store);
    const run = (...args: string[]) => runExport(root, ...args);
    const urls = (text: string) => text.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l).url as string).sort();
    const ago = (minutes: number, unit: string) => {
      const when = new Date(Date.now() - minutes * 60_000);
      fs.utimesSync(path.join(root, 'store', 'records', 'museum.example', `${unit}.ndjson`), when, when);
    };
    await rec.write('museum.example', 'b1-g1', [{ url: 'https://m/1.jpg', outcome: 'done' }, { url: 'https://m/2.jpg', outcome: 'done' }]);
    ago(30, 'b1-g1');
    const cursor = path.join(root, 'loaded-until');

    const first = await run('--cursor', cursor);
    expect(first.code).toBe(0);
    expect(urls(first.stdout)).toEqual(['https://m/1.jpg', 'https://m/2.jpg']);
    // Before the newest file by the overlap that covers files being written while the store was
    // listed, naming the files from there on that it gave.
    const saved = () => JSON.parse(fs.readFileSync(cursor, 'utf8')) as { since: string; given: Record<string, string> };
    const moved = Date.parse(saved().since);
    expect(Math.abs(moved - (Date.now() - 32 * 60_000))).toBeLessThan(30_000);
    expect(Object.keys(saved().given)).toEqual(['records/museum.example/b1-g1.ndjson']);
    expect(first.stderr).toContain(`the cursor ${cursor} now starts at ${new Date(moved).toISOString()}`);
    // Nothing written since: nothing again.
    const nothing = await run('--cursor', cursor);
    expect([nothing.code, nothing.stdout]).toEqual([0, '']);
    expect(nothing.stderr).toContain('1 file(s) the last export gave left out');

    await rec.write('museum.example', 'b2-g1', [{ url: 'https://m/3.jpg', outcome: 'linkrot' }]);
    ago(10, 'b2-g1');
    const second = await run('--cursor', cursor, '--out', path.join(root, 'new.csv'));
    expect(second.code).toBe(0);
    expect(fs.readFileSync(path.join(root, 'new.csv'), 'utf8').split('\r\n').filter(Boolean).map((l) => l.split(',')[0])).toEqual(['url', 'https://m/3.jpg']);
    const movedAgain = Date.parse(saved().since);
    expect(movedAgain).toBeGreaterThan(moved);
    // A file written again (a retried unit) is given again.
    ago(1, 'b1-g1');
    expect(urls((await run('--cursor', cursor)).stdout)).toEqual(['https://m/1.jpg', 'https://m/2.jpg']);
    const third = await run('--cursor', cursor);
    expect([third.code, third.stdout]).toEqual([0, '']);
    expect(third.stderr).toContain('1 file(s) written before it left out; 1 file(s) the last export gave left out');
    const cursorNow = fs.readFileSync(cursor, 'utf8');

    // An export that fails leaves the cursor where it was: nothing is skipped next time.
    await rec.write('museum.example', 'b3-g1', [{ url: 'https://m/4.jpg', outcome: 'done' }]);
    fs.mkdirSync(path.join(root, 'taken.ndjson'));
    const failed = await run('--cursor', cursor, '--out', path.join(root, 'taken.ndjson'));
    expect(failed.code).not.toBe(0);
    expect(fs.readFileSync(cursor, 'utf8')).toBe(cursorNow);
    expect(urls((await run('--cursor', cursor)).stdout)).toEqual(['https://m/4.jpg']);

    const both = await run('--cursor', cursor, '--since', '1h');
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain('--since and --cursor both say where to start');
    fs.writeFileSync(cursor, 'last tuesday\n');
    const damaged = await run('--cursor', cursor);
    expect(damaged.code).not.toBe(0);
    expect(damaged.stderr).toContain(`the cursor ${cursor} holds no time ("last tuesday")`);
    const since = await run('--since', '5m');
    expect(urls(since.stdout)).toEqual(['https://m/1.jpg', 'https://m/2.jpg', 'https://m/4.jpg']);
    expect(since.stderr).toMatch(/written since \S+Z .*; what is written after this \(with the last minutes' again\): --since \S+Z/);
  });

  it('replaces a file whole and leaves nothing half-written when the store fails', async () => {
    const store = new LocalStore(path.join(root, 'store'));
    await crawled(store);
    const file = path.join(root, 'metadata.ndjson');
    fs.writeFileSync(file, 'old\n');
    expect((await exportRecordsToFile(store, file)).records).toBe(4);
    expect(fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)).toHaveLength(4);

    const broken = Object.assign(Object.create(store) as LocalStore, { get: async () => { throw new Error('store down'); } });
    await expect(exportRecordsToFile(broken, file)).rejects.toThrow('store down');
    expect(fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)).toHaveLength(4);
    expect(fs.readdirSync(root).sort()).toEqual(['metadata.ndjson', 'store']);
  });

  it('stops quietly with exit code 0 when its reader goes away (`crawl export | head`)', async () => {
    const cli = path.resolve(__dirname, '..', '..', 'bin', 'crawl');
    if (!fs.existsSync(path.resolve(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js'))) throw new Error('build first: npm run build (make test does it)');
    const rec = new StoreRecorder(new LocalStore(path.join(root, 'store')));
    // Enough that the export is still writing when the reader has gone.
    for (let f = 0; f < 20; f++) {
      await rec.write('big.example', `b${f}-g1`, Array.from({ length: 500 }, (_, i) => ({ url: `https://big.example/${f}/${i}.jpg`, outcome: 'done', reason: 'x'.repeat(200) })));
    }
    const child = spawn(process.execPath, [cli, 'export', '--data-dir', root], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(stderr).not.toMatch(/EPIPE|Error/);
    expect(code).toBe(0);
  });

  it('exports only the outcomes asked for, judged on the record each URL keeps', async () => {
    const store = new LocalStore(root);
    const rec = new StoreRecorder(store);
    await rec.write('wall.example', 'm1-c0-g1', [
      { url: 'https://wall/1.jpg', source: 'wall.example', outcome: 'content', recordedAt: '2026-11-27T10:00:01.000Z' },
      { url: 'https://wall/2.jpg', source: 'wall.example', outcome: 'linkrot', recordedAt: '2026-11-27T10:00:01.000Z' },
      { url: 'https://wall/3.jpg', source: 'wall.example', outcome: 'error', recordedAt: '2026-11-27T10:00:01.000Z' },
    ]);
    // Asked again: 1 came (done now), so it is no longer a failure.
    await rec.write('wall.example', 'a0-c0-g1', [{ url: 'https://wall/1.jpg', source: 'wall.example', outcome: 'done', recordedAt: '2026-11-27T10:00:05.000Z' }]);
    let text = '';
    const summary = await exportRecords(store, (t) => { text += t; }, [], { outcomes: outcomesOption('content, LINKROT,error') });
    expect(text.trim().split('\n').map((l) => JSON.parse(l).url)).toEqual(['https://wall/2.jpg', 'https://wall/3.jpg']);
    expect(summary).toMatchObject({ records: 2, otherOutcomes: 1, superseded: 1 });
    // A line damaged by hand is counted whatever else the export does with the rest.
    fs.appendFileSync(path.join(root, 'records', 'wall.example', 'a0-c0-g1.ndjson'), '{"url": cut short\n');
    const asCsv = await exportRecords(store, () => undefined, [], { outcomes: outcomesOption('error'), format: 'csv', allRecords: true });
    expect(asCsv).toMatchObject({ records: 1, otherOutcomes: 3, notRecords: 1 });
    expect(() => outcomesOption('failed,error')).toThrow('--outcome "failed,error": failed is no outcome; give one or more of done, linkrot, robots, content, refused, error, separated by commas');
    expect(() => outcomesOption(',')).toThrow(/give one or more of/);
  });

  it('says when a CSV has more rows than a spreadsheet opens', () => {
    const summary = (records: number) => ({ records, units: 9, sourcesWithoutRecords: [], superseded: 0 });
    expect(exportedLine(summary(1_048_575), 'local directory S', { out: '/o/r.csv', format: 'csv' })).toBe('1048575 record(s) from 9 file(s) in the local directory S written to /o/r.csv as CSV');
    expect(exportedLine(summary(1_048_576), 'local directory S', { out: '/o/r.csv.gz', format: 'csv' })).toBe('1048576 record(s) from 9 file(s) in the local directory S written to /o/r.csv.gz as CSV, gzip-compressed; ' +
      'more rows than a spreadsheet opens (Excel and LibreOffice Calc: 1,048,576 with the header): a database\'s CSV import reads them all, or export sources apart (`crawl export SOURCE --out FILE`)');
    expect(exportedLine(summary(2_000_000), 'local directory S', { format: 'ndjson' })).toBe('2000000 record(s) from 9 file(s) in the local directory S');
  });

  it('writes CSV for an --out file ending in .csv, or with --csv, as an operator runs it', async () => {
    const store = new LocalStore(path.join(root, 'store'));
    await crawled(store);
    const run = (...args: string[]) => runExport(root, ...args);
    const file = path.join(root, 'records.CSV');
    const toFile = await run('--out', file);
    expect(toFile.code).toBe(0);
    expect(toFile.stderr).toContain(`4 record(s) from 3 file(s) in the local directory ${path.join(root, 'store')} written to ${file} as CSV`);
    const lines = fs.readFileSync(file, 'utf8').split('\r\n');
    expect(lines[0]).toMatch(/^url,source,outcome,reason,status,/);
    expect(lines.slice(1).filter(Boolean).map((l) => l.split(',').slice(0, 3).join(' ')).sort()).toEqual([
      'http://host:8080/a.jpg  content', 'https://m/1.jpg  done', 'https://m/2.jpg  linkrot', 'https://m/3.jpg  done',
    ]);

    const toStdout = await run('--csv', 'museum.example');
    expect(toStdout.code).toBe(0);
    expect(toStdout.stdout.split('\r\n').filter(Boolean)).toHaveLength(4);
    expect((await run('--out', path.join(root, 'r.ndjson'))).code).toBe(0);
    expect(JSON.parse(fs.readFileSync(path.join(root, 'r.ndjson'), 'utf8').split('\n')[0]!)).toHaveProperty('url');

    const gz = path.join(root, 'records.csv.gz');
    const compressed = await run('--out', gz);
    expect(compressed.stderr).toContain(`written to ${gz} as CSV, gzip-compressed`);
    expect(zlib.gunzipSync(fs.readFileSync(gz)).toString('utf8')).toBe(fs.readFileSync(file, 'utf8'));

    // Joined to the manifest that listed them: its id column comes back with each record.
    await new StoreRecorder(store).write('museum.example', 'b3-g1', [{ url: 'https://m/4.jpg', source: 'museum.example', outcome: 'done' }]);
    const manifest = path.join(root, 'ids.csv');
    fs.writeFileSync(manifest, 'id,url,source\nimg-4,https://m/4.jpg,museum.example\nimg-9,https://m/9.jpg,museum.example\n');
    const joined = await run('--manifest', manifest);
    expect(joined.code).toBe(0);
    expect(joined.stdout.trim().split('\n').map((l) => JSON.parse(l))).toEqual([{ url: 'https://m/4.jpg', source: 'museum.example', outcome: 'done', manifest: { line: 2, id: 'img-4' } }]);
    expect(joined.stderr).toContain(`joined to ${manifest}; 4 record(s) of URLs it does not list left out; 1 of its 2 URL(s) have no record yet`);

    const wrong = await run('--format', 'xlsx');
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain('--format xlsx: give csv or ndjson');
  });
});
