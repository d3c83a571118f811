import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import type { Client } from '@temporalio/client';
import { chunkKeys, continuesNote, downloadedBeforeNote, grewNote, queuedElsewhereNote, startCrawl, startWarnings, sharedHostsWarning, unusedCatalogWarning, wwwTwinsWarning } from '../../src/crawl/start';
import { createCrawlActivities, type UrlProcessor } from '../../src/activities/crawlActivities';
import { StoreRecorder } from '../../src/activities/storeRecorder';
import { LocalStore, type ObjectStore } from '../../src/pipeline/store';
import { batchRunUnit, recordFile } from '../../src/shared/recordUnits';
import { chunkOf } from '../../src/shared/chunkRanges';
import type { ChunkRange, OutcomeClass, SourceConfig } from '../../src/shared/types';
import { PATCH_LEVEL } from '../../src/workflows/patchLevel';
import { GuardedHosts } from '../../src/crawl/guardedHosts';
import { NetworkGuard } from '../../src/pipeline/networkGuard';

/** A store whose calls take 0-8 ms in random order, like a remote S3, remembering what it holds. */
class SlowStore implements ObjectStore {
  readonly description = 'slow memory store';
  readonly objects = new Map<string, string>();
  inFlight = 0;
  maxInFlight = 0;
  gets = 0;
  lists = 0;

  private async delay(): Promise<void> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    await new Promise((r) => setTimeout(r, Math.random() * 8));
    this.inFlight--;
  }

  async put(key: string, body: Buffer | string): Promise<void> {
    await this.delay();
    this.objects.set(key, String(body));
  }

  async get(key: string): Promise<Buffer | undefined> {
    this.gets++;
    await this.delay();
    const v = this.objects.get(key);
    return v === undefined ? undefined : Buffer.from(v);
  }

  async *list(prefix: string): AsyncIterable<string> {
    this.lists++;
    await this.delay();
    for (const k of [...this.objects.keys()]) if (k.startsWith(prefix)) yield k;
  }
}

/** Records what each monitor was sent, as signal-with-start would deliver it. */
function recordingClient(): { client: Client; sent: Map<string, ChunkRange[]> } {
  const sent = new Map<string, ChunkRange[]>();
  const client = {
    workflow: {
      signalWithStart: async (_wf: unknown, opts: { args: [{ source: string }]; signalArgs: [ChunkRange[]] }) => {
        const source = opts.args[0].source;
        sent.set(source, [...(sent.get(source) ?? []), ...opts.signalArgs[0]]);
      },
    },
  } as unknown as Client;
  return { client, sent };
}

/** The chunks announced to a source's monitor, one by one. */
const announcedChunks = (sent: Map<string, ChunkRange[]>, source: string) =>
  (sent.get(source) ?? []).flatMap((r) => Array.from({ length: r.last - r.first + 1 }, (_, k) => chunkOf(r, r.first + k)));

/** An NDJSON manifest of these lines in a new directory. */
function writeManifest(lines: string[]): string {
  const manifest = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'start-')), 'm.ndjson');
  fs.writeFileSync(manifest, lines.join('\n'));
  return manifest;
}

describe('startCrawl', () => {
  it('stops reading the manifest when aborted, announcing only whole chunks, so that the next start adds exactly the rest', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-abort-'));
    const manifest = path.join(dir, 'm.txt');
    const lines = Array.from({ length: 1_005 }, (_, i) => `https://a.example/${i}.jpg`);
    fs.writeFileSync(manifest, lines.join('\n'));
    const store = new SlowStore();
    const abort = new AbortController();
    const put = store.put.bind(store);
    let puts = 0;
    store.put = async (key, body) => {
      if (++puts === 5) abort.abort(); // Ctrl-C while the manifest is being split
      return put(key, body);
    };
    const first = recordingClient();
    await startCrawl({ client: first.client, store, manifest, taskQueue: 'q', chunkSize: 10, signal: abort.signal });
    const chunksOf = (sent: Map<string, ChunkRange[]>) =>
      (sent.get('a.example') ?? []).flatMap((r) => Array.from({ length: r.last - r.first + 1 }, (_, k) => chunkOf(r, r.first + k)));
    const firstChunks = chunksOf(first.sent);
    expect(firstChunks.length).toBeGreaterThanOrEqual(5);
    expect(firstChunks.length).toBeLessThan(101);
    // Only whole chunks, each holding exactly its stretch of the manifest.
    for (const c of firstChunks) {
      const n = Number(c.chunkId.split('-').at(-1));
      expect(c.count).toBe(10);
      expect(store.objects.get(c.spool!)!.trim().split('\n')).toEqual(lines.slice(10 * n, 10 * n + 10));
    }
    // The next start announces every chunk; a monitor adds those it has not seen: every URL once.
    const second = recordingClient();
    await startCrawl({ client: second.client, store, manifest, taskQueue: 'q', chunkSize: 10 });
    const seen = new Map([...firstChunks, ...chunksOf(second.sent)].map((c) => [c.chunkId, c]));
    const urls = [...seen.values()].flatMap((c) => store.objects.get(c.spool!)!.trim().split('\n'));
    expect(urls.sort()).toEqual([...lines].sort());
  });

  it('splits sources into chunk files in parallel and tells each monitor exactly the chunks to crawl, in order', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-'));
    const manifest = path.join(dir, 'm.txt');
    // Two sources interleaved: 2,003 URLs of a and 1,000 of b, chunks of 10.
    const lines: string[] = [];
    for (let i = 0; i < 2_003; i++) {
      lines.push(`https://a.example/${i}.jpg`);
      if (i < 1_000) lines.push(`https://b.example/${i}.jpg`);
    }
    fs.writeFileSync(manifest, lines.join('\n'));
    const store = new SlowStore();
    const first = recordingClient();
    const summary = await startCrawl({ client: first.client, store, manifest, taskQueue: 'q', chunkSize: 10 });
    expect(store.maxInFlight).toBeGreaterThan(4);

    // Every URL is in exactly one announced chunk, in manifest order, with the right count.
    const announced = (sent: Map<string, ChunkRange[]>, source: string) =>
      (sent.get(source) ?? []).flatMap((r) => Array.from({ length: r.last - r.first + 1 }, (_, k) => chunkOf(r, r.first + k)));
    const urlsOf = (source: string, sent: Map<string, ChunkRange[]>) => announced(sent, source).flatMap((c) => {
      const text = store.objects.get(c.spool!)!.trim().split('\n');
      expect(text).toHaveLength(c.count);
      return text;
    });
    expect(urlsOf('a.example', first.sent)).toEqual(lines.filter((l) => l.includes('a.example')));
    expect(urlsOf('b.example', first.sent)).toEqual(lines.filter((l) => l.includes('b.example')));
    expect(summary.sources.get('a.example')).toEqual({ urls: 2_003, chunks: 201, alreadyDone: 0, downloadedBefore: 0, queuedElsewhere: 0, chunksOfOthers: 0 });

    // Chunks 0-49 and 120 of a finished meanwhile: a second start announces only the others.
    const { manifestId } = summary;
    for (const n of [...Array.from({ length: 50 }, (_, k) => k), 120]) store.objects.set(chunkKeys(manifestId, 'a.example', n).done, 'x');
    const second = recordingClient();
    store.gets = 0;
    store.lists = 0;
    const again = await startCrawl({ client: second.client, store, manifest, taskQueue: 'q', chunkSize: 10 });
    // One listing of done-markers per source, not a look-up per chunk (and one of the earlier
    // manifests, one of the hosts of named sources, one read of this manifest's own record).
    expect({ gets: store.gets, lists: store.lists }).toEqual({ gets: 1, lists: 4 });
    expect(again.sources.get('a.example')!.alreadyDone).toBe(510);
    expect(announced(second.sent, 'a.example').map((c) => Number(c.chunkId.split('-')[1]))).toEqual(
      Array.from({ length: 201 }, (_, k) => k).filter((n) => n >= 50 && n !== 120));
    expect(announced(second.sent, 'a.example').at(-1)!.count).toBe(3);
  });

  it('reports its progress: lines while reading the manifest, then each source once its monitor has its work', async () => {
    const lines = Array.from({ length: 100_002 }, (_, i) => JSON.stringify({ url: `https://s${i % 3}.example/${i}.jpg` }));
    const { client, sent } = recordingClient();
    const seen: { linesRead: number; sourcesStarted: number; sources: number | null; monitorsSent: number }[] = [];
    await startCrawl({
      client, store: new SlowStore(), manifest: writeManifest(lines), taskQueue: 'q', chunkSize: 20_000,
      onProgress: (p) => seen.push({ ...p, monitorsSent: sent.size }),
    });
    expect(seen).toEqual([
      { linesRead: 50_000, sourcesStarted: 0, sources: null, monitorsSent: 0 },
      { linesRead: 100_000, sourcesStarted: 0, sources: null, monitorsSent: 0 },
      { linesRead: 100_002, sourcesStarted: 0, sources: 3, monitorsSent: 0 },
      ...[1, 2, 3].map((n) => ({ linesRead: 100_002, sourcesStarted: n, sources: 3, monitorsSent: expect.any(Number) as number })),
    ]);
    // A source is counted once its monitor has been sent its chunks.
    for (const p of seen.slice(3)) expect(p.monitorsSent).toBeGreaterThanOrEqual(p.sourcesStarted);
  });

  it('keeps sources whose names differ only in characters unsafe in keys apart', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-'));
    const manifest = path.join(dir, 'm.ndjson');
    // Manifests allow letters, digits, '.', '_', ':' and '-' (up to 200): ':' and a name past 150
    // characters were turned into the same key as another name.
    const long = 'x'.repeat(160);
    const sources = ['a:b', 'a_b', `${long}1`, `${long}2`];
    fs.writeFileSync(manifest, sources.flatMap((source, k) => [0, 1, 2].map((i) => JSON.stringify({ url: `https://x.example/${k}/${i}.jpg`, source }))).join('\n'));
    const store = new SlowStore();
    const { client, sent } = recordingClient();
    await startCrawl({ client, store, manifest, taskQueue: 'q', chunkSize: 2 });
    sources.forEach((source, k) => {
      const urls = (sent.get(source) ?? []).flatMap((r) => Array.from({ length: r.last - r.first + 1 }, (_, j) => chunkOf(r, r.first + j)))
        .flatMap((c) => store.objects.get(c.spool!)!.trim().split('\n'));
      expect(urls).toEqual([0, 1, 2].map((i) => `https://x.example/${k}/${i}.jpg`));
    });
  });

  it('starts each monitor at this code\'s patch level, so that its patches cost no history events', async () => {
    const manifest = writeManifest(['a', 'b'].map((h) => JSON.stringify({ url: `https://${h}.example/1.jpg` })));
    const inputs: { source: string; patchLevel?: number }[] = [];
    const client = {
      workflow: { signalWithStart: async (_wf: unknown, opts: { args: [{ source: string; patchLevel?: number }] }) => { inputs.push(opts.args[0]); } },
    } as unknown as Client;
    await startCrawl({ client, store: new SlowStore(), manifest, taskQueue: 'q' });
    expect(inputs.map((i) => [i.source, i.patchLevel]).sort()).toEqual([['a.example', PATCH_LEVEL], ['b.example', PATCH_LEVEL]]);
    expect(PATCH_LEVEL).toBeGreaterThan(0);
  });

  it('names the catalogue entries that match no source of the manifest, so a misspelt name is seen', async () => {
    const manifest = writeManifest([
      '{"url":"https://a.example/1.jpg"}',
      '{"url":"https://b.example:8443/1.jpg"}',
      '{"url":"https://c.example/1.jpg","source":"museum"}',
    ]);
    const catalog = new Map(['a.example', 'b.example', 'b.example:8443', 'musuem', 'museum'].map((n) => [n, { rate: 2 }]));
    const { client, sent } = recordingClient();
    const summary = await startCrawl({ client, store: new SlowStore(), manifest, catalog, taskQueue: 'q' });
    expect([...sent.keys()].sort()).toEqual(['a.example', 'b.example:8443', 'museum']);
    expect(summary.unusedCatalogEntries).toEqual(['b.example', 'musuem']);
    expect(unusedCatalogWarning(summary)).toMatch(/^catalog entries "b\.example", "musuem" match no source in the manifest, so their settings are not used/);
    expect(unusedCatalogWarning({ ...summary, unusedCatalogEntries: [] })).toBeUndefined();
  });

  it('gives a source the catalogue entry that names its host as people write it: another case, a trailing dot, Unicode', async () => {
    const manifest = writeManifest([
      '{"url":"https://bücher.example/1.jpg"}',
      '{"url":"https://www.museum.org/1.jpg"}',
      '{"url":"https://c.example/1.jpg","source":"Museum"}',
    ]);
    const catalog = new Map<string, SourceConfig>([['Bücher.Example', { rate: 0.5 }], ['WWW.Museum.Org.', { rate: 3 }], ['Museum', { rate: 4 }], ['museum', { rate: 9 }]]);
    const configs = new Map<string, SourceConfig | undefined>();
    const client = { workflow: { signalWithStart: async (_wf: unknown, opts: { args: [{ source: string; config?: SourceConfig }] }) => { configs.set(opts.args[0].source, opts.args[0].config); } } } as unknown as Client;
    const summary = await startCrawl({ client, store: new SlowStore(), manifest, catalog, taskQueue: 'q' });
    expect(Object.fromEntries([...configs].map(([source, config]) => [source, config?.rate]))).toEqual({ 'xn--bcher-kva.example': 0.5, 'www.museum.org': 3, Museum: 4 });
    // Names without a dot are names, not hosts: "museum" is not "Museum".
    expect(summary.unusedCatalogEntries).toEqual(['museum']);
  });

  it('sends a source\'s catalogue entry, --max-rate and --max-retry-after with its work too, for a monitor already running, and nothing for a source without either', async () => {
    const manifest = writeManifest(['a', 'b'].map((h) => JSON.stringify({ url: `https://${h}.example/1.jpg` })));
    const extra = new Map<string, unknown[]>();
    const client = { workflow: { signalWithStart: async (_wf: unknown, opts: { args: [{ source: string }]; signalArgs: unknown[] }) => { extra.set(opts.args[0].source, opts.signalArgs.slice(1)); } } } as unknown as Client;
    await startCrawl({ client, store: new SlowStore(), manifest, catalog: new Map([['A.example', { rate: 0.5, burst: 1 }]]), taskQueue: 'q' });
    expect(Object.fromEntries(extra)).toEqual({ 'a.example': [{ catalog: { rate: 0.5, burst: 1 } }], 'b.example': [] });
    await startCrawl({ client, store: new SlowStore(), manifest, catalog: new Map([['a.example', { rate: 0.5 }]]), maxRate: 3, taskQueue: 'q' });
    expect(Object.fromEntries(extra)).toEqual({ 'a.example': [{ catalog: { rate: 0.5 }, maxRate: 3 }], 'b.example': [{ maxRate: 3 }] });
    await startCrawl({ client, store: new SlowStore(), manifest, maxRetryAfterMs: 120_000, taskQueue: 'q' });
    expect(Object.fromEntries(extra)).toEqual({ 'a.example': [{ maxRetryAfterMs: 120_000 }], 'b.example': [{ maxRetryAfterMs: 120_000 }] });
  });

  it('names the hosts whose URLs are in more than one source, since each source sends at its own rate', async () => {
    const manifest = writeManifest([
      '{"url":"https://a.example/1.jpg"}',
      '{"url":"https://a.example/2.jpg","source":"art"}',
      '{"url":"https://b.example/1.jpg","source":"art"}',
      '{"url":"https://b.example/2.jpg","source":"photos"}',
      '{"url":"https://c.example/1.jpg","source":"cats"}',
      '{"url":"https://c.example/2.jpg","source":"cats"}',
      '{"url":"https://d.example/1.jpg","source":"dogs"}',
      '{"url":"https://d.example/2.jpg"}',
      '{"url":"https://e.example/1.jpg"}',
    ]);
    const summary = await startCrawl({ client: recordingClient().client, store: new SlowStore(), manifest, taskQueue: 'q' });
    expect([...summary.sharedHosts].map(([h, s]) => [h, [...s].sort()])).toEqual([
      ['a.example', ['a.example', 'art']],
      ['b.example', ['art', 'photos']],
      ['d.example', ['d.example', 'dogs']],
    ]);
    expect(sharedHostsWarning(summary)).toBe('3 hosts are in more than one source: a.example (in "a.example", "art"); b.example (in "art", "photos"); '
      + 'd.example (in "dogs", "d.example"). Each source keeps to its own rate, so such a host gets the sum; give all of a host\'s URLs one source to hold it to one rate');
    expect(sharedHostsWarning({ ...summary, sharedHosts: new Map() })).toBeUndefined();
  });

  it('names hosts crawled as two sources, with and without www., since one site would get both rates', async () => {
    const manifest = writeManifest([
      '{"url":"https://a.example/1.jpg"}',
      '{"url":"https://www.a.example/2.jpg"}',
      '{"url":"https://b.example:8080/1.jpg"}',
      '{"url":"https://www.b.example:8080/1.jpg"}',
      '{"url":"https://c.example/1.jpg"}',
      '{"url":"https://www.c.example:8080/1.jpg"}',
      '{"url":"https://www.d.example/1.jpg"}',
      '{"url":"https://d.example/1.jpg","source":"d-photos"}',
    ]);
    const summary = await startCrawl({ client: recordingClient().client, store: new SlowStore(), manifest, taskQueue: 'q' });
    expect(summary.wwwTwins.sort()).toEqual(['a.example', 'b.example:8080']);
    expect(wwwTwinsWarning(summary)).toBe('a.example and www.a.example; b.example:8080 and www.b.example:8080 are pairs of sources, each sending at its own rate; '
      + 'if a pair is one site, its servers get the sum: give both names\' URLs one "source" to hold the site to one rate');
    expect(wwwTwinsWarning({ ...summary, wwwTwins: [] })).toBeUndefined();
    // Hosts of one site that are not a www pair on one port, named sources left out: warned of apart.
    expect(summary.siteGroups).toEqual([{ site: 'c.example', hosts: ['c.example', 'www.c.example:8080'] }]);
    expect(startWarnings(summary).filter((w) => w.includes('hosts of one site'))).toEqual([expect.stringMatching(/^2 sources are hosts of one site: c\.example \(c\.example, www\.c\.example:8080\); /)]);
  });

  it('crawls a URL listed more than once once, whatever source or spelling it comes with', async () => {
    const manifest = writeManifest([
      '{"url":"https://a.example/1.jpg"}',
      '{"url":"https://a.example/2.jpg"}',
      '{"url":"https://a.example/1.jpg"}',
      '{"url":"HTTPS://A.EXAMPLE/1.jpg"}',
      '{"url":"https://a.example/1.jpg","source":"museum"}',
      '{"url":"https://a.example/3.jpg","source":"museum"}',
    ]);
    const store = new SlowStore();
    const { client, sent } = recordingClient();
    const summary = await startCrawl({ client, store, manifest, taskQueue: 'q' });
    expect(summary.duplicates).toBe(3);
    expect(summary.sources.get('a.example')).toMatchObject({ urls: 2 });
    expect(summary.sources.get('museum')).toMatchObject({ urls: 1 });
    const urls = (source: string) => (sent.get(source) ?? []).flatMap((r) => Array.from({ length: r.last - r.first + 1 }, (_, j) => chunkOf(r, r.first + j)))
      .flatMap((c) => store.objects.get(c.spool!)!.trim().split('\n'));
    expect(urls('a.example')).toEqual(['https://a.example/1.jpg', 'https://a.example/2.jpg']);
    expect(urls('museum')).toEqual(['https://a.example/3.jpg']);
  });

  describe('a manifest that continues an earlier one', () => {
    const urlsIn = (store: SlowStore, sent: Map<string, ChunkRange[]>, source: string) =>
      announcedChunks(sent, source).flatMap((c) => store.objects.get(c.spool!)!.trim().split('\n'));
    /** What the batches do when a chunk is finished: its done-marker. */
    const finishAll = (store: SlowStore, sent: Map<string, ChunkRange[]>) => {
      for (const source of sent.keys()) for (const c of announcedChunks(sent, source)) store.objects.set(c.spool!.replace(/\.txt$/, '.done'), '');
    };
    const a = (i: number) => `https://a.example/${i}.jpg`;
    const b = (i: number) => `https://b.example/${i}.jpg`;

    it('starts only the whole lines a file had when first read when it grows meanwhile (still being written), and refuses one cut short', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-growing-'));
      const manifest = path.join(dir, 'm.txt');
      // The writer has got part-way through line 11.
      fs.writeFileSync(manifest, `${Array.from({ length: 10 }, (_, i) => a(i)).join('\n')}\nhttps://a.exa`);
      /** Changes the manifest the first time its id is recorded, between the start's two reads of it. */
      class GrowingStore extends SlowStore {
        constructor(private change?: () => void) { super(); }
        override async put(key: string, body: Buffer | string): Promise<void> {
          if (key.startsWith('work/manifests/')) this.change?.();
          this.change = undefined;
          await super.put(key, body);
        }
      }
      const store = new GrowingStore(() => fs.appendFileSync(manifest, `mple/10.jpg\n${a(11)}\n`));
      const one = recordingClient();
      const first = await startCrawl({ client: one.client, store, manifest, taskQueue: 'q', chunkSize: 4 });
      expect(first.grew).toEqual({ lines: 10 });
      expect(grewNote(first, 'm.txt')).toBe('m.txt grew while it was being started (is something still writing it?): its first 10 line(s), ' +
        'as it was when first read, are started; start it again once it is complete, and only the lines added since are crawled');
      expect(urlsIn(store, one.sent, 'a.example')).toEqual(Array.from({ length: 10 }, (_, i) => a(i)));
      expect(first.sources.get('a.example')).toMatchObject({ urls: 10, chunks: 3 });

      // Complete, it is a new manifest (its first one ended part-way through a line): what the
      // first start queued is left to its chunks, and only the new URLs are the new manifest's.
      const two = recordingClient();
      const second = await startCrawl({ client: two.client, store, manifest, taskQueue: 'q', chunkSize: 4 });
      expect(second.grew).toBeUndefined();
      expect(second.sources.get('a.example')).toMatchObject({ urls: 12, queuedElsewhere: 10 });
      expect(announcedChunks(two.sent, 'a.example').filter((c) => c.chunkId.startsWith(second.manifestId)).flatMap((c) => store.objects.get(c.spool!)!.trim().split('\n')))
        .toEqual([a(10), a(11)]);

      // Cut short between the two reads (replaced by a shorter file): refused, nothing announced.
      const cut = path.join(dir, 'cut.txt');
      fs.writeFileSync(cut, `${a(20)}\n${a(21)}\n`);
      const shrinking = new GrowingStore(() => fs.writeFileSync(cut, `${a(20)}\n`));
      const three = recordingClient();
      await expect(startCrawl({ client: three.client, store: shrinking, manifest: cut, taskQueue: 'q' }))
        .rejects.toThrow(`manifest ${cut} is shorter than when it was first read a moment ago (replaced or truncated while being started): start it again once nothing writes to it`);
      expect(three.sent.size).toBe(0);
    });

    it('crawls only the lines appended to it, and its earlier lines keep their chunks', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-grown-'));
      const manifest = path.join(dir, 'm.txt');
      const first = [...Array.from({ length: 25 }, (_, i) => a(i)), ...Array.from({ length: 7 }, (_, i) => b(i))];
      fs.writeFileSync(manifest, `${first.join('\n')}\n`);
      const store = new SlowStore();
      const one = recordingClient();
      const before = await startCrawl({ client: one.client, store, manifest, taskQueue: 'q', chunkSize: 10 });
      expect(before.continues).toBeUndefined();
      finishAll(store, one.sent);

      // The user appends lines (one repeating a URL crawled already) and starts the file again.
      const added = [a(25), a(3), b(7), 'https://c.example/0.jpg', 'not a url'];
      fs.appendFileSync(manifest, `${added.join('\n')}\n`);
      const two = recordingClient();
      const bad: number[] = [];
      const after = await startCrawl({ client: two.client, store, manifest, taskQueue: 'q', chunkSize: 10, onBadLine: (l) => bad.push(l.line) });
      expect(after.continues).toEqual({ lines: 32, path: manifest });
      expect(after.manifestId).not.toBe(before.manifestId);
      expect(urlsIn(store, two.sent, 'a.example')).toEqual([a(25)]);
      expect(urlsIn(store, two.sent, 'b.example')).toEqual([b(7)]);
      expect(urlsIn(store, two.sent, 'c.example')).toEqual(['https://c.example/0.jpg']);
      expect(after.sources.get('a.example')).toMatchObject({ urls: 26, alreadyDone: 25 });
      expect(after.duplicates).toBe(1);
      expect(bad).toEqual([37]);
      expect(continuesNote(after, manifest)).toBe(`the first 32 line(s) of ${manifest} were started before: they keep the chunks and progress they had then (nothing is crawled twice), and only the lines after them are new`);
      expect(continuesNote(before, manifest)).toBeUndefined();

      // Started a third time after a longer manifest with the same beginning appeared: the
      // portions are those of its first start, so its chunks hold what they held then.
      const other = path.join(dir, 'other.txt');
      fs.writeFileSync(other, `${[...first, a(25), a(3)].join('\n')}\n`);
      const longer = await startCrawl({ client: recordingClient().client, store, manifest: other, taskQueue: 'q', chunkSize: 10 });
      expect(continuesNote(longer, other)).toMatch(new RegExp(`^the first 32 line\\(s\\) of ${other} are the manifest ${manifest}, started before:`));
      const three = recordingClient();
      const again = await startCrawl({ client: three.client, store, manifest, taskQueue: 'q', chunkSize: 10 });
      expect(again.continues).toEqual({ lines: 32, path: manifest });
      expect(announcedChunks(three.sent, 'a.example')).toEqual(announcedChunks(two.sent, 'a.example'));
    });

    it('does not continue a manifest whose last line, without a line break, was then extended', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-edited-'));
      const manifest = path.join(dir, 'm.txt');
      fs.writeFileSync(manifest, `${a(1)}\nhttps://a.example/2`);
      const store = new SlowStore();
      const one = recordingClient();
      await startCrawl({ client: one.client, store, manifest, taskQueue: 'q' });
      finishAll(store, one.sent);
      fs.writeFileSync(manifest, `${a(1)}\nhttps://a.example/2.jpg\n`);
      const two = recordingClient();
      const summary = await startCrawl({ client: two.client, store, manifest, taskQueue: 'q' });
      expect(summary.continues).toBeUndefined();
      expect(urlsIn(store, two.sent, 'a.example')).toEqual([a(1), a(2)]);
    });

    const utf16 = (text: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    it.each([
      ['gzip', 'm.txt.gz', (text: string) => zlib.gzipSync(text)],
      ['UTF-16', 'm16.txt', utf16],
      ['carriage-return (classic Mac)', 'mac.txt', (text: string) => text.replace(/\n/g, '\r')],
    ])('takes a %s manifest for the same lines as plain text, and continues it when it grows', async (_kind, name, encode) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-encoded-'));
      const store = new SlowStore();
      const lines = Array.from({ length: 12 }, (_, i) => a(i));
      const plain = path.join(dir, 'm.txt');
      fs.writeFileSync(plain, `${lines.join('\n')}\n`);
      const one = recordingClient();
      const first = await startCrawl({ client: one.client, store, manifest: plain, taskQueue: 'q', chunkSize: 5 });
      finishAll(store, one.sent);
      const encoded = path.join(dir, name);
      fs.writeFileSync(encoded, encode(`${lines.join('\n')}\n`));
      const same = await startCrawl({ client: recordingClient().client, store, manifest: encoded, taskQueue: 'q', chunkSize: 5 });
      expect(same.manifestId).toBe(first.manifestId);
      expect(same.sources.get('a.example')).toMatchObject({ urls: 12, alreadyDone: 12 });
      // Written again with two more lines: only those are crawled.
      fs.writeFileSync(encoded, encode(`${[...lines, a(12), a(13)].join('\n')}\n`));
      const two = recordingClient();
      const grown = await startCrawl({ client: two.client, store, manifest: encoded, taskQueue: 'q', chunkSize: 5 });
      expect(grown.continues).toEqual({ lines: 12, path: plain });
      expect(urlsIn(store, two.sent, 'a.example')).toEqual([a(12), a(13)]);
    });

    it('gives a manifest with bytes that are not UTF-8 a new id (its lines read differently now), and continues it when it grows', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-latin1-'));
      const store = new SlowStore();
      const manifest = path.join(dir, 'm.txt');
      const text = `${a(1)}\nhttps://a.example/caf\xe9.jpg\n${a(2)}\n`;
      fs.writeFileSync(manifest, Buffer.from(text, 'latin1'));
      const one = recordingClient();
      const first = await startCrawl({ client: one.client, store, manifest, taskQueue: 'q' });
      const v3 = createHash('sha256').update('manifest-rules v3\nformat-hint none\n').update(Buffer.from(text, 'latin1')).digest('hex').slice(0, 16);
      expect(first.manifestId).not.toBe(v3);
      expect(first.badLines).toBe(1);
      finishAll(store, one.sent);
      // Grown by a line: the lines before keep their chunks, the Latin-1 one stays refused.
      fs.appendFileSync(manifest, `${a(3)}\n`);
      const two = recordingClient();
      const grown = await startCrawl({ client: two.client, store, manifest, taskQueue: 'q' });
      expect(grown.continues).toEqual({ lines: 3, path: manifest });
      expect(urlsIn(store, two.sent, 'a.example')).toEqual([a(3)]);
      // A UTF-8 manifest grown by such a line continues as well: its own lines read as before.
      const clean = path.join(dir, 'clean.txt');
      fs.writeFileSync(clean, `${a(4)}\n`);
      const three = recordingClient();
      await startCrawl({ client: three.client, store, manifest: clean, taskQueue: 'q' });
      finishAll(store, three.sent);
      fs.appendFileSync(clean, Buffer.from(`https://a.example/\xe9.jpg\n${a(5)}\n`, 'latin1'));
      const four = recordingClient();
      const cleanGrown = await startCrawl({ client: four.client, store, manifest: clean, taskQueue: 'q' });
      expect(cleanGrown.continues).toEqual({ lines: 1, path: clean });
      expect(urlsIn(store, four.sent, 'a.example')).toEqual([a(5)]);
    });

    it('keeps the ids manifests had: a change of the CSV rules gives only CSV manifests new ones', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-ids-'));
      const store = new SlowStore();
      const idOf = async (name: string, text: string) => {
        const manifest = path.join(dir, name);
        fs.writeFileSync(manifest, text);
        return (await startCrawl({ client: recordingClient().client, store, manifest, taskQueue: 'q' })).manifestId;
      };
      // An id is the manifest's bytes hashed after the rules they are read by and its format hint.
      const v3 = (hint: string, text: string) => createHash('sha256').update(`manifest-rules v3\nformat-hint ${hint}\n${text}`).digest('hex').slice(0, 16);
      const list = `${a(1)}\n${a(2)}\n`;
      expect(await idOf('m.txt', list)).toBe(v3('none', list));
      const ndjson = `{"url":"${a(1)}"}\n`;
      expect(await idOf('m.ndjson', ndjson)).toBe(v3('ndjson', ndjson));
      expect(await idOf('m.csv', `url\n${a(1)}\n`)).not.toBe(v3('csv', `url\n${a(1)}\n`));
      // CSV read by the rules of session 87 (a record is not joined over a line that is one of its
      // own): only CSVs with a line of an odd number of quotes, which the rule may read otherwise, get new ids.
      const csvV3 = (text: string) => createHash('sha256').update(`manifest-rules v3 csv-columns\nformat-hint csv\n${text}`).digest('hex').slice(0, 16);
      const quoted = `url,title\n"${a(1)}","x"\n${a(2)},"y, z"\n`;
      expect(await idOf('q.csv', quoted)).toBe(csvV3(quoted));
      const open = `url,title\n${a(1)},"Sunset\n${a(2)},ok\n${a(3)},"Dawn\n`;
      expect(await idOf('o.csv', open)).not.toBe(csvV3(open));
      expect(await idOf('o.csv', open)).toBe(createHash('sha256').update(`manifest-rules v3 csv-columns\nformat-hint csv\n${open}\nrule csv-own-line-records\n`).digest('hex').slice(0, 16));
    });

    it('reads the same bytes named .ndjson and .txt as different manifests, since their lines differ', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-format-'));
      const store = new SlowStore();
      const ids: string[] = [];
      for (const name of ['m.ndjson', 'm.txt']) {
        const manifest = path.join(dir, name);
        // A URL list as m.txt, a line that is not JSON as m.ndjson (a .csv without a url column is refused).
        fs.writeFileSync(manifest, `${a(1)}\n`);
        ids.push((await startCrawl({ client: recordingClient().client, store, manifest, taskQueue: 'q' })).manifestId);
      }
      expect(ids[0]).not.toBe(ids[1]);
    });
  });
  describe('a manifest listing URLs that another manifest downloaded', () => {
    const a = (i: number) => `https://a.example/${i}.jpg`;
    const urlsIn = async (store: ObjectStore, sent: Map<string, ChunkRange[]>, source: string) =>
      (await Promise.all(announcedChunks(sent, source).map(async (c) => (await store.get(c.spool!))!.toString().trim().split('\n')))).flat();
    /** What a crawl of the announced chunks leaves in the store: records by the batches, then each chunk marked done. */
    const crawl = async (store: LocalStore, sent: Map<string, ChunkRange[]>, outcome: (url: string) => OutcomeClass) => {
      const recorder = new StoreRecorder(store);
      const acts = createCrawlActivities({ processor: {} as UrlProcessor, recorder, store });
      for (const [source] of sent) {
        for (const c of announcedChunks(sent, source)) {
          const urls = (await store.get(c.spool!))!.toString().trim().split('\n');
          await recorder.write(source, recordFile(batchRunUnit(c.chunkId, '00000000-0000-4000-8000-0123456789ab'), 'b', 'g1'), urls.map((url) => ({ url, source, outcome: outcome(url) })));
          await acts.markChunkDone(c);
        }
      }
    };
    const writeFile = (dir: string, name: string, urls: string[]) => {
      const file = path.join(dir, name);
      fs.writeFileSync(file, `${urls.join('\n')}\n`);
      return file;
    };

    it('leaves out the URLs their source downloaded, and its chunks stay as first made whatever is downloaded later', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-downloaded-'));
      const store = new LocalStore(path.join(dir, 'store'));
      const first = recordingClient();
      const manifestA = writeFile(dir, 'a.txt', Array.from({ length: 25 }, (_, i) => a(i)));
      await startCrawl({ client: first.client, store, manifest: manifestA, taskQueue: 'q', chunkSize: 10 });
      // 404 and a failure are not downloads: another manifest listing them tries them again.
      await crawl(store, first.sent, (url) => (url === a(5) ? 'linkrot' : url === a(6) ? 'error' : 'done'));

      // A new manifest: the same site's images re-sorted, with new ones among them.
      const manifestB = writeFile(dir, 'b.txt', [a(30), a(24), a(5), a(6), a(3), a(31), a(0), a(32)]);
      const second = recordingClient();
      const summary = await startCrawl({ client: second.client, store, manifest: manifestB, taskQueue: 'q', chunkSize: 2 });
      expect(await urlsIn(store, second.sent, 'a.example')).toEqual([a(30), a(5), a(6), a(31), a(32)]);
      expect(summary.sources.get('a.example')).toMatchObject({ urls: 8, downloadedBefore: 3 });
      expect(summary.downloadedBefore).toBe(3);
      expect(downloadedBeforeNote(summary)).toBe('3 URL(s) left out: their sources downloaded them under another manifest started into this store ' +
        '(their records stand: `crawl export`); each image is downloaded once');

      // Its first chunk is crawled; meanwhile a third manifest downloads a(31), which the second
      // one's unfinished chunk holds (as when the second was started by an earlier version,
      // which marked no chunk as queued). Started again, the second keeps its chunks as they
      // were: chunk 0's done-marker speaks for a(30) and a(5) only.
      const firstChunkOnly = new Map([['a.example', [{ ...second.sent.get('a.example')![0]!, last: second.sent.get('a.example')![0]!.first, lastCount: 2 }]]]);
      await crawl(store, firstChunkOnly, (url) => (url === a(5) ? 'linkrot' : 'done'));
      for await (const key of store.list('index/')) if (key.endsWith('.queued')) fs.rmSync(path.join(dir, 'store', key));
      const third = recordingClient();
      await startCrawl({ client: third.client, store, manifest: writeFile(dir, 'c.txt', [a(31)]), taskQueue: 'q' });
      await crawl(store, third.sent, () => 'done');
      const again = recordingClient();
      const restarted = await startCrawl({ client: again.client, store, manifest: manifestB, taskQueue: 'q', chunkSize: 2 });
      expect(await urlsIn(store, again.sent, 'a.example')).toEqual([a(6), a(31), a(32)]);
      expect(restarted.sources.get('a.example')).toMatchObject({ alreadyDone: 2, downloadedBefore: 3 });

      // A fourth manifest leaves out everything downloaded by then, a(30) and a(31) included.
      const fourth = recordingClient();
      await startCrawl({ client: fourth.client, store, manifest: writeFile(dir, 'd.txt', [a(30), a(31), a(33), a(5)]), taskQueue: 'q' });
      expect(await urlsIn(store, fourth.sent, 'a.example')).toEqual([a(33), a(5)]);
    });

    it('warns of refused addresses only for the URLs it sends, not for those downloaded before', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-guarded-'));
      const store = new LocalStore(path.join(dir, 'store'));
      const p = (i: number) => `http://10.0.0.7:8080/${i}.jpg`;
      // Crawled before by workers given --allow-network 10.0.0.7; one a 404, not a download.
      const first = recordingClient();
      await startCrawl({ client: first.client, store, manifest: writeFile(dir, 'a.txt', Array.from({ length: 6 }, (_, i) => p(i))), taskQueue: 'q', chunkSize: 2 });
      await crawl(store, first.sent, (url) => (url === p(2) ? 'linkrot' : 'done'));

      const guardedHosts = new GuardedHosts(new NetworkGuard([]));
      const second = recordingClient();
      await startCrawl({ client: second.client, store, manifest: writeFile(dir, 'b.txt', [p(7), ...Array.from({ length: 6 }, (_, i) => p(i))]), taskQueue: 'q', chunkSize: 2, guardedHosts });
      // Another manifest (not the first grown): its own chunks, the 404 asked again.
      expect(await urlsIn(store, second.sent, '10.0.0.7:8080')).toEqual([p(7), p(2)]);
      expect(guardedHosts.warning('start')).toMatch(/^2 URL\(s\) are on addresses the network guard refuses unless it is opened for them: 10\.0\.0\.7:8080 \(2 URL\(s\): address 10\.0\.0\.7 is private\)/);

      // The same manifest again once crawled: its chunks are done, and nothing of it is asked for.
      await crawl(store, second.sent, (url) => (url === p(2) ? 'linkrot' : 'done'));
      const rerun = new GuardedHosts(new NetworkGuard([]));
      const again = await startCrawl({ client: recordingClient().client, store, manifest: path.join(dir, 'b.txt'), taskQueue: 'q', chunkSize: 2, guardedHosts: rerun });
      expect(again.sources.get('10.0.0.7:8080')).toMatchObject({ alreadyDone: 2, downloadedBefore: 5 });
      expect(rerun.warning('start')).toBeUndefined();

      const nothingNew = new GuardedHosts(new NetworkGuard([]));
      await startCrawl({ client: recordingClient().client, store, manifest: writeFile(dir, 'c.txt', [p(0), p(1), p(3)]), taskQueue: 'q', guardedHosts: nothingNew });
      expect(nothingNew.warning('start')).toBeUndefined();
    });

    it('leaves out URLs downloaded under another source name: under their host, or under a name of their own before a manifest lists them without one', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-renamed-'));
      const store = new LocalStore(path.join(dir, 'store'));
      const named = (name: string, source: string, urls: string[]) => {
        const file = path.join(dir, name);
        fs.writeFileSync(file, urls.map((url) => `${JSON.stringify({ url, source })}\n`).join(''));
        return file;
      };
      // Crawled first as a plain URL list: the host is the source.
      const first = recordingClient();
      await startCrawl({ client: first.client, store, manifest: writeFile(dir, 'a.txt', [0, 1, 2, 3].map(a)), taskQueue: 'q' });
      await crawl(store, first.sent, (url) => (url === a(3) ? 'linkrot' : 'done'));

      // Then under a source name of its own (a catalogue's rates, say): only what is new, and a(3), which was no download.
      const second = recordingClient();
      const b = await startCrawl({ client: second.client, store, manifest: named('b.ndjson', 'shop', [a(0), a(1), a(3), a(4)]), taskQueue: 'q' });
      expect(await urlsIn(store, second.sent, 'shop')).toEqual([a(3), a(4)]);
      expect(b.sources.get('shop')).toMatchObject({ urls: 4, downloadedBefore: 2 });
      expect({ before: b.downloadedBefore, underOther: b.downloadedUnderOtherSource }).toEqual({ before: 2, underOther: 2 });
      expect(downloadedBeforeNote(b)).toBe('2 URL(s) left out: their sources downloaded them under another manifest started into this store ' +
        '(2 of them under another source name: a line without a "source" is under its URL\'s host) (their records stand: `crawl export`); each image is downloaded once');
      await crawl(store, second.sent, () => 'done');

      // Without a name again, and under a third name: what "shop" downloaded is left out too.
      const third = recordingClient();
      const c = await startCrawl({ client: third.client, store, manifest: writeFile(dir, 'c.txt', [a(4), a(5), a(1)]), taskQueue: 'q' });
      expect(await urlsIn(store, third.sent, 'a.example')).toEqual([a(5)]);
      expect(c.downloadedUnderOtherSource).toBe(1);
      const fourth = recordingClient();
      await startCrawl({ client: fourth.client, store, manifest: named('d.ndjson', 'shop-eu', [a(4), a(0), a(6)]), taskQueue: 'q' });
      expect(await urlsIn(store, fourth.sent, 'shop-eu')).toEqual([a(6)]);

      // What a manifest leaves out for another source is fixed at its first start: started again
      // after a(7) was downloaded under the host, its chunk still holds a(7).
      const fifth = recordingClient();
      const e = named('e.ndjson', 'shop-us', [a(2), a(7), a(8)]);
      await startCrawl({ client: fifth.client, store, manifest: e, taskQueue: 'q' });
      expect(await urlsIn(store, fifth.sent, 'shop-us')).toEqual([a(7), a(8)]);
      const sixth = recordingClient();
      await startCrawl({ client: sixth.client, store, manifest: writeFile(dir, 'f.txt', [a(7)]), taskQueue: 'q' });
      await crawl(store, sixth.sent, () => 'done');
      const again = recordingClient();
      const restarted = await startCrawl({ client: again.client, store, manifest: e, taskQueue: 'q' });
      expect(await urlsIn(store, again.sent, 'shop-us')).toEqual([a(7), a(8)]);
      expect(restarted.downloadedUnderOtherSource).toBe(1);
      // One record per host and manifest, whatever the sources sharing it; without it the chunks cannot be made again.
      const keys: string[] = [];
      for await (const k of store.list(`work/${restarted.manifestId}/`)) if (!/chunk-/.test(k)) keys.push(k.slice(`work/${restarted.manifestId}/`.length));
      expect(keys.sort()).toEqual(['shop-us/under-host-a.example', '~hosts/a.example.json']);
      fs.rmSync(path.join(dir, 'store', 'work', restarted.manifestId, '~hosts', 'a.example.json'));
      await expect(startCrawl({ client: recordingClient().client, store, manifest: e, taskQueue: 'q' }))
        .rejects.toThrow(/under-host-a\.example names a record of what was downloaded of a\.example's URLs that is missing .*restore it, or start the manifest into another store/);
    });

    it('passes over a damaged index file at a first start, and refuses to make chunks again without one it used', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-damaged-index-'));
      const store = new LocalStore(path.join(dir, 'store'));
      const first = recordingClient();
      await startCrawl({ client: first.client, store, manifest: writeFile(dir, 'a.txt', [a(0), a(1)]), taskQueue: 'q' });
      await crawl(store, first.sent, () => 'done');
      const indexFile = (await (async () => { for await (const k of store.list('index/')) return k; return undefined; })())!;
      const good = (await store.get(indexFile))!;

      const later = writeFile(dir, 'c.txt', [a(1), a(2)]);
      const c = await startCrawl({ client: recordingClient().client, store, manifest: later, taskQueue: 'q' });
      expect(c.downloadedBefore).toBe(1);
      await store.put(indexFile, good.subarray(0, 5), 'application/octet-stream');
      await expect(startCrawl({ client: recordingClient().client, store, manifest: later, taskQueue: 'q' }))
        .rejects.toThrow(/index file index\/a\.example\/.*\.fp64 named in .*downloaded-before\.json is missing or damaged .*restore it, or start the manifest into another store/);

      // A manifest started for the first time meanwhile downloads a(1) again rather than fail.
      const other = recordingClient();
      const d = await startCrawl({ client: other.client, store, manifest: writeFile(dir, 'd.txt', [a(1), a(3)]), taskQueue: 'q' });
      expect(d.downloadedBefore).toBe(0);
      expect(await urlsIn(store, other.sent, 'a.example')).toEqual([a(1), a(3)]);
    });

    it('leaves URLs that another manifest\'s unfinished chunks hold to those chunks, and adds the chunks to its monitor', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-queued-'));
      const store = new LocalStore(path.join(dir, 'store'));
      const first = recordingClient();
      const a15 = Array.from({ length: 15 }, (_, i) => a(i));
      const started = await startCrawl({ client: first.client, store, manifest: writeFile(dir, 'a.txt', a15), taskQueue: 'q', chunkSize: 5 });
      const chunksA = announcedChunks(first.sent, 'a.example');
      // Chunk 0 is crawled; chunks 1 (a5-a9) and 2 (a10-a14) are still waiting or running.
      await crawl(store, new Map([['a.example', [{ ...first.sent.get('a.example')![0]!, last: 0, lastCount: 5 }]]]), () => 'done');

      const manifestB = writeFile(dir, 'b.txt', [a(7), a(2), a(20), a(8)]);
      const second = recordingClient();
      const summary = await startCrawl({ client: second.client, store, manifest: manifestB, taskQueue: 'q' });
      expect(summary.sources.get('a.example')).toMatchObject({ urls: 4, chunks: 1, downloadedBefore: 1, queuedElsewhere: 2, chunksOfOthers: 1 });
      expect(summary.queuedElsewhere).toBe(2);
      expect(queuedElsewhereNote(summary)).toBe('2 URL(s) left out: chunks of another manifest started into this store hold them, unfinished when this one was first started; ' +
        'they are crawled once, under it (the 1 chunk(s) holding them go to their sources\' monitors too, in case that crawl was stopped before it came to them)');
      // Its own chunk holds only the new URL; the first manifest's chunk 1, which holds a7 and
      // a8, goes to the monitor with it (chunk 2 shares nothing and does not).
      const announced = announcedChunks(second.sent, 'a.example');
      expect(announced.map((c) => c.chunkId)).toEqual([`${summary.manifestId}-0`, chunksA[1]!.chunkId]);
      expect(announced[1]).toEqual(chunksA[1]);
      expect(await urlsIn(store, new Map([['a.example', second.sent.get('a.example')!.slice(0, 1)]]), 'a.example')).toEqual([a(20)]);

      // Chunk 1 finishes, every URL failing: its (empty) index file says it is finished, and
      // a manifest started now tries a7 itself. Started again, the second keeps its chunks as
      // they were and adds no finished chunk.
      await crawl(store, new Map([['a.example', [{ ...first.sent.get('a.example')![0]!, first: 1, last: 1, lastCount: 5 }]]]), () => 'error');
      const third = recordingClient();
      const c = await startCrawl({ client: third.client, store, manifest: writeFile(dir, 'c.txt', [a(7), a(12), a(30)]), taskQueue: 'q' });
      expect(c.sources.get('a.example')).toMatchObject({ downloadedBefore: 0, queuedElsewhere: 1, chunksOfOthers: 1 });
      expect(announcedChunks(third.sent, 'a.example').map((k) => k.chunkId)).toEqual([`${c.manifestId}-0`, chunksA[2]!.chunkId]);
      const again = recordingClient();
      const restarted = await startCrawl({ client: again.client, store, manifest: manifestB, taskQueue: 'q' });
      expect(restarted.sources.get('a.example')).toMatchObject({ downloadedBefore: 1, queuedElsewhere: 2, chunksOfOthers: 0 });
      expect(queuedElsewhereNote(restarted)).toBe('2 URL(s) left out: chunks of another manifest started into this store hold them, unfinished when this one was first started; ' +
        'they are crawled once, under it (those chunks have finished since)');
      expect(announcedChunks(again.sent, 'a.example').map((k) => k.chunkId)).toEqual([`${summary.manifestId}-0`]);

      // The manifest's own unfinished chunks are not another's: started again, it announces them as before.
      const self = recordingClient();
      const same = await startCrawl({ client: self.client, store, manifest: path.join(dir, 'a.txt'), taskQueue: 'q', chunkSize: 5 });
      expect(same.manifestId).toBe(started.manifestId);
      expect(same.sources.get('a.example')).toMatchObject({ alreadyDone: 10, queuedElsewhere: 0, chunksOfOthers: 0 });
      expect(announcedChunks(self.sent, 'a.example').map((k) => k.chunkId)).toEqual([chunksA[2]!.chunkId]);

      // The list of a chunk the second manifest left URLs to is gone: its chunks cannot be made again.
      fs.rmSync(path.join(dir, 'store', chunksA[1]!.spool!));
      await expect(startCrawl({ client: recordingClient().client, store, manifest: manifestB, taskQueue: 'q' }))
        .rejects.toThrow(/the chunk work\/.*chunk-000001\.txt of another manifest, named in .*downloaded-before\.json, is missing/);
    });
  });
});
