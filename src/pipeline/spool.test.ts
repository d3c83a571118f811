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

  it('keeps in memory, within bounds, what its directory cannot take (the disk the store filled)', async () => {
    // A file where the directory should be: every write fails, as on a full disk.
    const blocked = path.join(dir, 'spool');
    fs.writeFileSync(blocked, '');
    const spool = new Spool(blocked, { bytes: 10, records: 1 });
    const b = 'https://site.example/b.jpg';
    await spool.put(url, Buffer.from('123456'), { tdmReservation: '1' });
    expect(spool.mayHold(url)).toBe(true);
    // Past the bound the caller hears of the failure, as before (the site is asked again).
    await expect(spool.put(b, Buffer.from('123456'))).rejects.toThrow();
    expect(await spool.get(url)).toEqual({ body: Buffer.from('123456'), rights: { tdmReservation: '1' } });
    await spool.delete(url);
    expect(await spool.get(url)).toBeUndefined();
    await spool.put(b, Buffer.from('123456'));
    expect(await spool.get(b)).toEqual({ body: Buffer.from('123456') });

    const kept = { outcome: { cls: 'done' as const, sent: true, status: 200 }, record: { width: 3 } };
    await spool.keepRecord(url, kept);
    await expect(spool.keepRecord(b, kept)).rejects.toThrow();
    expect(await spool.takeRecord(url)).toEqual(kept);
    expect(await spool.takeRecord(url)).toBeUndefined();
    await spool.keepRecord(b, kept);
    await spool.dropRecords([b]);
    expect(await spool.takeRecord(b)).toBeUndefined();
  });
});
