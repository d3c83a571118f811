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
});
