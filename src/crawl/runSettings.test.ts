import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../pipeline/store';
import { readRunSettings, rememberRunSettings, RUN_SETTINGS_KEY } from './runSettings';

describe('the settings kept in a store for crawl again', () => {
  let dir: string;
  let store: LocalStore;
  let warnings: string[];
  const warn = (m: string) => { warnings.push(m); };
  beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'run-settings-')); store = new LocalStore(dir); warnings = []; });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('has none before a run, and merges each run into what earlier ones left', async () => {
    expect(await readRunSettings(store, warn)).toBeUndefined();
    await rememberRunSettings(store, { catalog: new Map([['a', { rate: 20 }], ['b', { imageCount: 90_000, burst: 2 }]]), allowNetworks: ['127.0.0.0/8'], maxRate: 30 }, warn);
    // A later run without a catalogue or flags changes nothing; one with them replaces its sources' entries.
    await rememberRunSettings(store, { allowNetworks: [] }, warn);
    await rememberRunSettings(store, { catalog: new Map([['a', { rate: 5 }], ['c', { rate: 2, maxConnections: 4 }]]), allowNetworks: ['10.1.0.0/16', '127.0.0.0/8'], maxRetryAfterMs: 60_000 }, warn);
    expect(await readRunSettings(store, warn)).toEqual({
      catalog: new Map([['a', { rate: 5 }], ['b', { imageCount: 90_000, burst: 2 }], ['c', { rate: 2, maxConnections: 4 }]]),
      allowNetworks: ['127.0.0.0/8', '10.1.0.0/16'], maxRate: 30, maxRetryAfterMs: 60_000,
    });
    expect(warnings).toEqual([]);
    expect(fs.readdirSync(path.join(dir, 'work'))).toEqual([path.basename(RUN_SETTINGS_KEY)]);
    // `crawl again --max-rate none`: the ceiling is no longer kept; the rest is.
    await rememberRunSettings(store, { maxRate: null }, warn);
    expect(await readRunSettings(store, warn)).toEqual({
      catalog: new Map([['a', { rate: 5 }], ['b', { imageCount: 90_000, burst: 2 }], ['c', { rate: 2, maxConnections: 4 }]]),
      allowNetworks: ['127.0.0.0/8', '10.1.0.0/16'], maxRate: undefined, maxRetryAfterMs: 60_000,
    });
  });

  it('leaves out, saying so, a kept --allow-network entry the guard now refuses, and writes it out at the next run', async () => {
    await store.put(RUN_SETTINGS_KEY, JSON.stringify({ catalog: {}, allowNetworks: ['127.0.0.0/8', '999.1.1.1', 'intranet.example'] }), 'application/json');
    expect((await readRunSettings(store, warn))?.allowNetworks).toEqual(['127.0.0.0/8', 'intranet.example']);
    expect(warnings).toEqual([`${RUN_SETTINGS_KEY} in the ${store.description} keeps --allow-network "999.1.1.1", which opened nothing (allow-network entry "999.1.1.1" is not a valid IP address (four numbers 0-255, such as 127.0.0.1)): left out`]);
    await rememberRunSettings(store, { allowNetworks: ['10.0.0.0/8'] }, warn);
    warnings = [];
    expect((await readRunSettings(store, warn))?.allowNetworks).toEqual(['127.0.0.0/8', 'intranet.example', '10.0.0.0/8']);
    expect(warnings).toEqual([]);
  });

  it('keeps originals for every later run once one asked to, until one says not to', async () => {
    expect((await rememberRunSettings(store, { allowNetworks: [] }, warn)).keepOriginals).toBeUndefined();
    expect((await rememberRunSettings(store, { keepOriginals: true }, warn)).keepOriginals).toBe(true);
    // A run that does not say (CRAWL_KEEP_ORIGINALS unset) takes the store's.
    expect((await rememberRunSettings(store, { allowNetworks: ['127.0.0.0/8'] }, warn)).keepOriginals).toBe(true);
    expect((await readRunSettings(store, warn))?.keepOriginals).toBe(true);
    expect((await rememberRunSettings(store, { keepOriginals: false }, warn)).keepOriginals).toBe(false);
    expect((await rememberRunSettings(store, {}, warn)).keepOriginals).toBe(false);
    fs.writeFileSync(path.join(dir, RUN_SETTINGS_KEY), '{"catalog": {}, "allowNetworks": [], "keepOriginals": "yes"}');
    expect(await readRunSettings(store, warn)).toBeUndefined();
    expect(warnings).toEqual([expect.stringMatching(/"keepOriginals" is not true or false/)]);
  });

  it('keeps the perceptual hash on for later runs as it does originals, each on its own', async () => {
    expect((await rememberRunSettings(store, { perceptualHash: true }, warn))).toMatchObject({ perceptualHash: true });
    expect((await rememberRunSettings(store, { keepOriginals: true }, warn))).toMatchObject({ perceptualHash: true, keepOriginals: true });
    expect((await rememberRunSettings(store, { perceptualHash: false }, warn))).toMatchObject({ perceptualHash: false, keepOriginals: true });
    expect(await readRunSettings(store, warn)).toMatchObject({ perceptualHash: false, keepOriginals: true });
    fs.writeFileSync(path.join(dir, RUN_SETTINGS_KEY), '{"catalog": {}, "allowNetworks": [], "perceptualHash": 1}');
    expect(await readRunSettings(store, warn)).toBeUndefined();
    expect(warnings).toEqual([expect.stringMatching(/"perceptualHash" is not true or false/)]);
  });

  it('keeps each thumbnail setting a run gave until a later one gives it anew, and refuses what a worker would', async () => {
    expect((await rememberRunSettings(store, {}, warn)).thumbnails).toBeUndefined();
    await rememberRunSettings(store, { thumbnails: { format: 'webp', maxSide: 256 } }, warn);
    // A run that gives the quality alone keeps the format and size of the earlier one.
    expect((await rememberRunSettings(store, { thumbnails: { quality: 60 } }, warn)).thumbnails).toEqual({ format: 'webp', maxSide: 256, quality: 60 });
    expect((await rememberRunSettings(store, { thumbnails: { format: 'jpeg' } }, warn)).thumbnails).toEqual({ format: 'jpeg', maxSide: 256, quality: 60 });
    expect((await readRunSettings(store, warn))?.thumbnails).toEqual({ format: 'jpeg', maxSide: 256, quality: 60 });
    expect(warnings).toEqual([]);
    for (const [thumbnails, why] of [
      ['"small"', /"thumbnails" is not an object/],
      ['{"format": "png"}', /"thumbnails.format" is not jpeg or webp/],
      ['{"maxSide": 8}', /"thumbnails.maxSide" is not a whole number from 16 to 4096/],
      ['{"quality": 80.5}', /"thumbnails.quality" is not a whole number from 1 to 100/],
      ['{"size": 640}', /"thumbnails" has "size", which no run writes/],
    ] as const) {
      fs.writeFileSync(path.join(dir, RUN_SETTINGS_KEY), `{"catalog": {}, "allowNetworks": [], "thumbnails": ${thumbnails}}`);
      warnings = [];
      expect(await readRunSettings(store, warn)).toBeUndefined();
      expect(warnings).toEqual([expect.stringMatching(why)]);
    }
  });

  it('replaces an earlier entry of the same host, however either names it', async () => {
    await rememberRunSettings(store, { catalog: new Map([['Bücher.Example', { rate: 2 }], ['other.example', { rate: 1 }]]) }, warn);
    await rememberRunSettings(store, { catalog: new Map([['xn--bcher-kva.example', { rate: 0.5 }]]) }, warn);
    expect((await readRunSettings(store, warn))!.catalog).toEqual(new Map([['other.example', { rate: 1 }], ['xn--bcher-kva.example', { rate: 0.5 }]]));
  });

  it('says so and applies nothing when what is kept is not what a run writes, and a run writes it anew', async () => {
    const file = path.join(dir, RUN_SETTINGS_KEY);
    fs.mkdirSync(path.dirname(file));
    for (const [text, why] of [
      ['{"catalog": {', /is not what a run writes \(.*JSON/],
      ['[]', /not a JSON object/],
      ['{"catalog": {"a": {"rate": -1}}, "allowNetworks": []}', /source "a": .*rate/],
      ['{"catalog": {}, "allowNetworks": "127.0.0.0/8"}', /"allowNetworks" is not a list of strings/],
      ['{"catalog": {}, "allowNetworks": [], "maxRate": "fast"}', /"maxRate" is not a positive number/],
    ] as const) {
      fs.writeFileSync(file, text);
      warnings = [];
      expect(await readRunSettings(store, warn)).toBeUndefined();
      expect(warnings).toEqual([expect.stringMatching(why)]);
      expect(warnings[0]).toMatch(/the earlier runs' settings \(catalogue, --allow-network, ceilings, originals, dHash, thumbnails\) are not applied$/);
    }
    warnings = [];
    await rememberRunSettings(store, { catalog: new Map([['a', { rate: 3 }]]), allowNetworks: [] }, warn);
    expect(warnings).toEqual([expect.stringMatching(/: the earlier runs' settings \(catalogue, --allow-network, ceilings, originals, dHash, thumbnails\) are replaced by this one's$/)]);
    expect((await readRunSettings(store, warn))?.catalog).toEqual(new Map([['a', { rate: 3 }]]));
  });
});
