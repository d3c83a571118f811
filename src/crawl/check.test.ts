import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { planCrawl, planText } from './check';
import { downloadedIndexPrefix, encodeFingerprints, hostSourceKey } from '../pipeline/downloadedIndex';
import { sourceSegment } from '../pipeline/keys';
import { LocalStore } from '../pipeline/store';

describe('crawl check: what a manifest would crawl, from the files alone', () => {
  let dir: string;
  beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'check-')); });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('gives each source its URLs, rate and time, the longest first, with where each rate comes from', async () => {
    const manifest = path.join(dir, 'm.txt');
    const lines = [
      ...Array.from({ length: 6000 }, (_, i) => `https://big.example/${i}.jpg`),
      ...Array.from({ length: 100 }, (_, i) => `https://museum.example/${i}.jpg`),
      ...Array.from({ length: 50 }, (_, i) => `https://photos.example/${i}.jpg`),
      'https://museum.example/0.jpg', // a repeat
      'not a url',
    ];
    fs.writeFileSync(manifest, `${lines.join('\n')}\n`);
    const bad: number[] = [];
    const catalog = new Map([['museum.example', { rate: 2 }], ['photos.example', { imageCount: 250_002_500 }], ['gone.example', { rate: 5 }]]);
    const plan = await planCrawl({ manifest, catalog, maxRate: 50, onBadLine: (b) => bad.push(b.line) });
    expect(bad).toEqual([6152]);
    expect(plan).toMatchObject({ badLines: 1, duplicates: 1, unusedCatalogEntries: ['gone.example'] });
    expect(plan.sources.map((s) => [s.source, s.urls, s.rate, s.rateFrom, s.capped, Math.round(s.seconds)])).toEqual([
      ['big.example', 6000, 1, 'default', false, 6000],
      ['museum.example', 100, 2, 'rate', false, 50],
      // 100.5/s from its size, held to --max-rate's 50.
      ['photos.example', 50, 50, 'imageCount', true, 1],
    ]);
    const text = planText(plan).split('\n');
    expect(text[0]).toMatch(/^SOURCE +URLS +RATE\/S +TAKES +RATE FROM$/);
    expect(text[1]).toMatch(/^big\.example +6,000 +1 +~1h40m +no catalogue entry: the default 1\/s$/);
    expect(text[3]).toMatch(/^photos\.example +50 +50 +~1s +catalogue imageCount, capped by --max-rate$/);
    expect(text[4]).toBe('6,150 URL(s) in 3 source(s), crawled side by side: ~1h40m at these rates (the longest: big.example, 6,000 URLs at 1/s), longer with retries and back-off, shorter by the URLs a store has downloaded before (give --data-dir or --out to count them)');
    expect(text[5]).toMatch(/^1 source\(s\) of more than 5,000 URLs have no catalogue entry and go at 1\/s: give them a "rate"/);
  });

  it('says "1 URL" of a crawl whose longest source has one', async () => {
    const manifest = path.join(dir, 'one.txt');
    fs.writeFileSync(manifest, 'https://museum.example/0.jpg\n');
    const plan = await planCrawl({ manifest, catalog: new Map(), onBadLine: () => {} });
    expect(planText(plan).split('\n')[2]).toContain('(the longest: museum.example, 1 URL at 1/s)');
  });

  it('shows a rate below a thousandth a second as it is, not as 0', async () => {
    const manifest = path.join(dir, 'slow.txt');
    fs.writeFileSync(manifest, 'https://archive.example/0.jpg\n');
    const plan = await planCrawl({ manifest, catalog: new Map([['archive.example', { rate: 0.00012345 }]]), onBadLine: () => {} });
    const text = planText(plan).split('\n');
    expect(text[1]).toMatch(/^archive\.example +1 +0\.000123 +~2h16m +catalogue rate$/);
    expect(text[2]).toContain('(the longest: archive.example, 1 URL at 0.000123/s)');
  });

  it('counts the URLs downloaded before into a store, as a start leaves them out, and times the rest', async () => {
    const store = new LocalStore(path.join(dir, 'store'));
    const index = (source: string, chunk: string, urls: string[]) =>
      store.put(`${downloadedIndexPrefix(sourceSegment(source))}${chunk}.fp64`, encodeFingerprints(urls), 'application/octet-stream');
    // An earlier manifest: museum's 0-59 in two chunks, and a damaged index file (passed over, as a start does).
    await index('museum', '0123456789abcdef-0', Array.from({ length: 40 }, (_, i) => `https://museum.example/${i}.jpg`));
    await index('museum', '0123456789abcdef-1', Array.from({ length: 20 }, (_, i) => `https://museum.example/${40 + i}.jpg`));
    await store.put(`${downloadedIndexPrefix(sourceSegment('museum'))}0123456789abcdef-2.fp64`, Buffer.alloc(5), 'application/octet-stream');
    // photos.example's URLs listed under a name of their own before ("gallery"), now under their host.
    await index('gallery', 'fedcba9876543210-0', ['https://photos.example/1.jpg', 'https://photos.example/2.jpg']);
    await store.put(hostSourceKey(sourceSegment('photos.example'), sourceSegment('gallery')), '', 'text/plain');
    // Another source's download of the same URL is that source's.
    await index('elsewhere', 'aaaaaaaaaaaaaaaa-0', ['https://museum.example/99.jpg']);
    const manifest = path.join(dir, 'm.ndjson');
    fs.writeFileSync(manifest, [
      ...Array.from({ length: 100 }, (_, i) => JSON.stringify({ url: `https://museum.example/${i}.jpg`, source: 'museum' })),
      JSON.stringify({ url: 'https://museum.example/5.jpg', source: 'museum' }), // a repeat, counted once
      ...Array.from({ length: 5 }, (_, i) => JSON.stringify({ url: `https://photos.example/${i}.jpg` })),
    ].join('\n'));
    const plan = await planCrawl({ manifest, catalog: new Map([['museum', { rate: 2 }]]), store });
    expect(plan.sources.map((s) => [s.source, s.urls, s.downloadedBefore, s.seconds])).toEqual([
      ['museum', 100, 60, 20],
      ['photos.example', 5, 2, 3],
    ]);
    const text = planText(plan).split('\n');
    expect(text[0]).toMatch(/^SOURCE +URLS +DOWNLOADED +RATE\/S +TAKES +RATE FROM$/);
    expect(text[1]).toMatch(/^museum +100 +60 +2 +~20s +catalogue rate$/);
    expect(text[3]).toBe(`105 URL(s) in 2 source(s), crawled side by side: ~20s at these rates (the longest: museum, 40 URLs to fetch at 2/s), longer with retries and back-off; 62 of them downloaded before into the local directory ${path.join(dir, 'store')}, which a start leaves out`);
    // Without the store: the files alone.
    expect((await planCrawl({ manifest })).sources.map((s) => s.downloadedBefore)).toEqual([undefined, undefined]);
  });

  it('finds the hosts given more than one rate, as start does', async () => {
    const manifest = path.join(dir, 'm.ndjson');
    fs.writeFileSync(manifest, [
      { url: 'https://a.example/1.jpg', source: 'museum' }, { url: 'https://a.example/2.jpg' },
      { url: 'https://b.example/1.jpg' }, { url: 'https://www.b.example/1.jpg' },
      { url: 'https://img1.c.example/1.jpg' }, { url: 'https://img2.c.example/1.jpg' },
    ].map((l) => JSON.stringify(l)).join('\n'));
    const plan = await planCrawl({ manifest });
    expect([...plan.sharedHosts]).toEqual([['a.example', new Set(['museum', 'a.example'])]]);
    expect(plan.wwwTwins).toEqual(['b.example']);
    expect(plan.siteGroups).toEqual([{ site: 'c.example', hosts: ['img1.c.example', 'img2.c.example'] }]);
  });
});
