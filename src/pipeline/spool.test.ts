import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { urlHash } from './keys';
import { Spool } from './spool';

describe('the spool of fetched bytes waiting for the store', () => {
  const url = 'https://site.example/a.jpg';
  let dir: string;
  beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-')); });

  it('keeps the response\'s rights headers beside the bytes, and removes both', async () => {
    const spool = new Spool(dir);
    await spool.put(url, Buffer.from('bytes'), { tdmReservation: '1', xRobotsTag: ['noai'] });
    // A worker restarted reads the directory afresh.
    const again = new Spool(dir);
    expect(await again.get(url)).toEqual({ body: Buffer.from('bytes'), rights: { tdmReservation: '1', xRobotsTag: ['noai'] } });
    await again.delete(url);
    expect(fs.readdirSync(dir)).toEqual([]);
    expect(await again.get(url)).toBeUndefined();
  });

  it('gives the bytes without rights when there were none, or their file is damaged', async () => {
    const spool = new Spool(dir);
    await spool.put(url, Buffer.from('bytes'));
    expect(await spool.get(url)).toEqual({ body: Buffer.from('bytes') });
    fs.writeFileSync(path.join(dir, `${urlHash(url)}.json`), '{"tdmRes');
    expect(await new Spool(dir).get(url)).toEqual({ body: Buffer.from('bytes') });
  });

  it('keeps a finished URL\'s record until it is taken or dropped, across a worker restart; a damaged one is none', async () => {
    const spool = new Spool(dir);
    expect(spool.mayHold(url)).toBe(true); // not read yet
    expect(await spool.takeRecord(url)).toBeUndefined();
    expect(spool.mayHold(url)).toBe(false);
    const kept = { outcome: { cls: 'done' as const, sent: true, status: 200 }, record: { width: 3, sha256: 'ab' } };
    await spool.keepRecord(url, kept);
    await spool.keepRecord('https://site.example/b.jpg', kept);
    const again = new Spool(dir);
    expect(await again.takeRecord(url)).toEqual(kept);
    expect(await again.takeRecord(url)).toBeUndefined();
    expect(again.mayHold('https://site.example/b.jpg')).toBe(true);
    await again.dropRecords(['https://site.example/b.jpg', 'https://site.example/never.jpg']);
    expect(again.mayHold('https://site.example/b.jpg')).toBe(false);
    expect(fs.readdirSync(dir)).toEqual([]);
    await again.keepRecord(url, kept);
    fs.writeFileSync(path.join(dir, `${urlHash(url)}.record.json`), '{"outcome": {"cls"');
    expect(await new Spool(dir).takeRecord(url)).toBeUndefined();
  });
});
