import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../pipeline/store';
import { StoreRecorder } from '../activities/storeRecorder';
import { exportRecords } from './exportRecords';
import { ManifestJoin } from './manifestJoin';

describe('records joined to the manifest lines that asked for them', () => {
  let dir: string;
  beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-join-')); });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, text: string) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return file;
  };

  it('gives each record its line and the line\'s own columns, meeting on the URL as the crawl wrote it', async () => {
    const manifest = write('m.csv', [
      'ID,Title,URL,Source',
      'img-1,"Photo 1, by Zoë",HTTP://Museum.Example/a b.jpg#top,museum', // written as the crawl sends it: http://museum.example/a%20b.jpg
      'img-2,Photo 2,https://museum.example/2.jpg,museum',
      'img-dup,Again,https://museum.example/2.jpg,museum', // crawled once, for its first line
      'img-bad,Bad,ftp://museum.example/3.jpg,museum',
      'img-4,Not crawled yet,https://museum.example/4.jpg,museum',
    ].join('\n'));
    const join = await ManifestJoin.read(manifest);
    expect(join.fieldNames).toEqual(['ID', 'Title']);
    expect(join.urls).toBe(3);
    expect(join.attach({ url: 'http://museum.example/a%20b.jpg', source: 'museum', outcome: 'done' })).toEqual({
      url: 'http://museum.example/a%20b.jpg', source: 'museum', outcome: 'done', manifest: { line: 2, ID: 'img-1', Title: 'Photo 1, by Zoë' },
    });
    expect(join.attach({ url: 'https://museum.example/2.jpg', source: 'museum', outcome: 'linkrot' })?.manifest).toEqual({ line: 3, ID: 'img-2', Title: 'Photo 2' });
    // Another manifest's URL, and the same URL under another source, are not this manifest's.
    expect(join.attach({ url: 'https://museum.example/9.jpg', source: 'museum' })).toBeUndefined();
    expect(join.attach({ url: 'https://museum.example/2.jpg', source: 'museum.example' })).toBeUndefined();
    expect(join.notInManifest).toBe(2);
    expect(join.withoutRecord).toBe(1);
  });

  it('joins NDJSON lines by their other keys, and a list of URLs by line number alone', async () => {
    const ndjson = await ManifestJoin.read(write('m.ndjson', [
      JSON.stringify({ url: 'https://a.example/1.jpg', id: 17, tags: ['x'] }),
      JSON.stringify({ url: 'https://a.example/2.jpg' }),
      JSON.stringify({ url: 'https://a.example/3.jpg', source: 'a', caption: 'c' }),
    ].join('\n')));
    expect(ndjson.fieldNames).toEqual(['id', 'tags', 'caption']);
    expect(ndjson.attach({ url: 'https://a.example/1.jpg', source: 'a.example' })?.manifest).toEqual({ line: 1, id: 17, tags: ['x'] });
    expect(ndjson.attach({ url: 'https://a.example/2.jpg', source: 'a.example' })?.manifest).toEqual({ line: 2 });
    expect(ndjson.attach({ url: 'https://a.example/3.jpg', source: 'a' })?.manifest).toEqual({ line: 3, caption: 'c' });
    const lines = await ManifestJoin.read(write('m.txt', '# images\nhttps://b.example/1.jpg\n\nhttps://b.example/2.jpg\n'));
    expect(lines.fieldNames).toEqual([]);
    expect(lines.attach({ url: 'https://b.example/2.jpg', source: 'b.example' })?.manifest).toEqual({ line: 4 });
  });

  it('exports only the manifest\'s records, as NDJSON or as CSV with a column per field', async () => {
    const store = new LocalStore(path.join(dir, 'store'));
    await new StoreRecorder(store).write('museum', 'b1-g1', [
      { url: 'https://museum.example/1.jpg', source: 'museum', outcome: 'done', width: 10 },
      { url: 'https://museum.example/other.jpg', source: 'museum', outcome: 'done' },
      // Written by another version, its fields in another order: read whole.
      { source: 'museum', outcome: 'linkrot', url: 'https://museum.example/3.jpg' },
    ]);
    const manifest = write('m.csv', 'id,url,source\nimg-1,https://museum.example/1.jpg,museum\nimg-2,https://museum.example/2.jpg,museum\nimg-3,https://museum.example/3.jpg,museum\n');
    let text = '';
    const join = await ManifestJoin.read(manifest);
    const summary = await exportRecords(store, (t) => { text += t; }, [], { join });
    expect(text.trim().split('\n').map((l) => JSON.parse(l))).toEqual([
      { url: 'https://museum.example/1.jpg', source: 'museum', outcome: 'done', width: 10, manifest: { line: 2, id: 'img-1' } },
      { source: 'museum', outcome: 'linkrot', url: 'https://museum.example/3.jpg', manifest: { line: 4, id: 'img-3' } },
    ]);
    expect(summary.records).toBe(2);
    expect([join.notInManifest, join.withoutRecord]).toEqual([1, 1]);

    text = '';
    await exportRecords(store, (t) => { text += t; }, [], { join: await ManifestJoin.read(manifest), format: 'csv' });
    const [header, row] = text.split('\r\n');
    const cells = header!.split(',');
    expect(cells.slice(-4)).toEqual(['redirects', 'manifest.line', 'manifest.id', 'other']);
    const values = row!.split(',');
    expect(values[cells.indexOf('manifest.line')]).toBe('2');
    expect(values[cells.indexOf('manifest.id')]).toBe('img-1');
    expect(values[cells.indexOf('other')]).toBe('');
  });
});
