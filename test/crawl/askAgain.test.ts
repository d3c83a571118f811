import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StoreRecorder } from '../../src/activities/storeRecorder';
import { againKind, writeAgainManifest, type AgainKind } from '../../src/crawl/askAgain';
import { readManifest } from '../../src/crawl/manifest';
import { LocalStore } from '../../src/pipeline/store';

describe('asking again for the URLs a wall answered', () => {
  let root: string;
  beforeEach(() => { root = fs.mkdtempSync(path.join(os.tmpdir(), 'again-')); });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('knows a wall\'s answers by their reasons, and failures by their outcome', () => {
    const walled = ['not an image: an HTML page', 'not an image: JSON starting "{\\"error\\":..."', 'not an image: text starting "Access Denied"', 'not an image: empty body',
      'more than 5 redirects', 'redirect loop: back to a URL of the chain with the same cookies', 'http 401', 'http 451'];
    for (const reason of walled) expect(againKind({ outcome: 'content', reason })).toBe('walled');
    for (const reason of ['not an image: an SVG (vector) image, which is not analysed', 'not an image: a PDF document', 'image too large: 30000x30000 pixels']) {
      expect(againKind({ outcome: 'content', reason })).toBeUndefined();
    }
    expect(againKind({ outcome: 'error', reason: 'timeout: headers timeout' })).toBe('failed');
    expect(againKind({ outcome: 'refused', reason: 'address 10.0.0.1 is private' })).toBe('failed');
    // A host the operator excluded (its owner asked): asked again, it would be crawled from a shell without the exclusion.
    expect(againKind({ outcome: 'refused', reason: 'img.museum.org is excluded by CRAWL_EXCLUDE_HOSTS (museum.org): not asked for' })).toBeUndefined();
    for (const outcome of ['done', 'linkrot', 'robots']) expect(againKind({ outcome, reason: 'http 404' })).toBeUndefined();
  });

  it('writes a manifest of each URL whose latest answer was of the kinds asked, new each time it is written', async () => {
    const store = new LocalStore(path.join(root, 'store'));
    const rec = new StoreRecorder(store);
    const r = (url: string, outcome: string, reason: string | null, s: number) => ({ url: `https://w.example/${url}`, source: 'w', outcome, reason, recordedAt: `2026-11-27T10:00:0${s}.000Z` });
    await rec.write('w', 'm1-g1', [r('1.jpg', 'content', 'not an image: an HTML page', 0), r('2.jpg', 'content', 'not an image: an HTML page', 1), r('3.jpg', 'error', 'timeout: total timeout', 2), r('4.jpg', 'content', 'not an image: a PDF document', 3), r('5.jpg', 'done', null, 4)]);
    // 2.jpg was asked again and came: its done record stands.
    await rec.write('w', 'm2-g1', [r('2.jpg', 'done', null, 8)]);
    await rec.write('other', 'm1-g1', [{ url: 'https://o.example/1.jpg', source: 'other', outcome: 'content', reason: 'http 401', recordedAt: '2026-11-27T10:00:00.000Z' }]);

    const read = async (file: string) => {
      const entries: { url: string; source: string | undefined }[] = [];
      for await (const e of readManifest(file)) if ('url' in e) entries.push({ url: e.url, source: e.source });
      return entries.sort((a, b) => a.url.localeCompare(b.url));
    };
    const file = path.join(root, 'again.ndjson');
    const walled = await writeAgainManifest(store, file, new Set<AgainKind>(['walled']), [], 'T1');
    expect(await read(file)).toEqual([{ url: 'https://o.example/1.jpg', source: 'other' }, { url: 'https://w.example/1.jpg', source: 'w' }]);
    expect(walled.urls).toBe(2);
    expect(Object.fromEntries(walled.bySource)).toEqual({ other: { walled: 1, failed: 0 }, w: { walled: 1, failed: 0 } });
    const first = fs.readFileSync(file);

    const both = await writeAgainManifest(store, file, new Set<AgainKind>(['walled', 'failed']), ['w'], 'T2');
    expect((await read(file)).map((e) => e.url)).toEqual(['https://w.example/1.jpg', 'https://w.example/3.jpg']);
    expect(both.urls).toBe(2);
    // Another time, other bytes: a manifest's id is its bytes, and these URLs are to be asked once more.
    await writeAgainManifest(store, file, new Set<AgainKind>(['walled']), [], 'T3');
    expect(fs.readFileSync(file).equals(first)).toBe(false);
    expect(fs.readdirSync(root).sort()).toEqual(['again.ndjson', 'store']);
  });
});
