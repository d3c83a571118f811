import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { diskState, DiskRoomWatch, FULL_BELOW_BYTES, lowBelowBytes, sampleDisk } from './diskRoom';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

describe('diskState', () => {
  it('calls a disk low below 256 MiB free, or a twentieth of a small one, and full below 1 MiB', () => {
    expect(lowBelowBytes(100 * GiB)).toBe(256 * MiB);
    expect(lowBelowBytes(400 * MiB)).toBe(20 * MiB);
    expect(lowBelowBytes(40 * MiB)).toBe(4 * MiB);
    expect(diskState({ freeBytes: 300 * MiB, totalBytes: 100 * GiB })).toBe('ok');
    expect(diskState({ freeBytes: 200 * MiB, totalBytes: 100 * GiB })).toBe('low');
    expect(diskState({ freeBytes: 0, totalBytes: 100 * GiB })).toBe('full');
    expect(diskState({ freeBytes: FULL_BELOW_BYTES - 1, totalBytes: 40 * MiB })).toBe('full');
  });

  it('leaves a state only with some room to spare, so a disk at a threshold is not reported at each look', () => {
    const total = 100 * GiB;
    expect(diskState({ freeBytes: 1.5 * MiB, totalBytes: total }, 'full')).toBe('full');
    expect(diskState({ freeBytes: 1.5 * MiB, totalBytes: total }, 'low')).toBe('low');
    expect(diskState({ freeBytes: 2 * MiB, totalBytes: total }, 'full')).toBe('low');
    expect(diskState({ freeBytes: 300 * MiB, totalBytes: total }, 'low')).toBe('low');
    expect(diskState({ freeBytes: 330 * MiB, totalBytes: total }, 'low')).toBe('ok');
  });
});

describe('DiskRoomWatch', () => {
  it('says when a disk fills and when it has room again, once per change, each disk once', () => {
    let free = 100 * MiB;
    const dev: Record<string, string> = { '/out/temporal': 'a', '/out/store': 'a', '/big/store': 'b' };
    const watch = new DiskRoomWatch(
      [{ dir: '/out/temporal', what: 'the embedded Temporal server' }, { dir: '/out/store', what: 'the store' }],
      (dir) => ({ freeBytes: dir.startsWith('/out') ? free : 10 * GiB, totalBytes: 1 * GiB }),
      (dir) => dev[dir],
    );
    // Room enough: nothing to say, at the start or later.
    expect(watch.check()).toEqual([]);
    free = 30 * MiB;
    const [low] = watch.check();
    expect(low).toMatchObject({ state: 'low', dirs: ['/out/temporal', '/out/store'], freeBytes: 30 * MiB });
    expect(low!.note).toBe('the disk of /out/temporal (the embedded Temporal server) and /out/store (the store) is nearly full (30.0 MB free of 1.0 GB): once it is full, the crawl waits until there is room');
    expect(watch.check()).toEqual([]);
    free = 0;
    expect(watch.check().map((n) => n.note)).toEqual(['the disk of /out/temporal (the embedded Temporal server) and /out/store (the store) is full (0 bytes free of 1.0 GB): the crawl waits, losing nothing, until there is room; free some space there and it goes on by itself']);
    expect(watch.check()).toEqual([]);
    free = 500 * MiB;
    expect(watch.check().map((n) => [n.state, n.note])).toEqual([['ok', 'the disk of /out/temporal (the embedded Temporal server) and /out/store (the store) has room again (500.0 MB free of 1.0 GB)']]);
  });

  it('reports a disk that is already full at the first look, and only the disk that is', () => {
    const watch = new DiskRoomWatch(
      [{ dir: '/out/temporal', what: 'the embedded Temporal server' }, { dir: '/big/store', what: 'the store' }],
      (dir) => ({ freeBytes: dir === '/out/temporal' ? MiB / 2 : 10 * GiB, totalBytes: 20 * GiB }),
      (dir) => (dir === '/out/temporal' ? 'a' : 'b'),
    );
    expect(watch.check().map((n) => [n.state, n.dirs])).toEqual([['full', ['/out/temporal']]]);
  });

  it('reads a real directory, and one not made yet by the parent it will be made in', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'disk-room-'));
    const real = sampleDisk(dir);
    expect(real!.totalBytes).toBeGreaterThan(0);
    expect(real!.freeBytes).toBeLessThanOrEqual(real!.totalBytes);
    expect(sampleDisk(path.join(dir, 'not', 'yet'))!.totalBytes).toBe(real!.totalBytes);
    expect(new DiskRoomWatch([{ dir: path.join(dir, 'not', 'yet'), what: 'x' }], () => ({ freeBytes: 0, totalBytes: GiB })).check()).toHaveLength(1);
  });
});
