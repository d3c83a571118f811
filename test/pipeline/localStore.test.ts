import fs from 'node:fs';
import fsPromises from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../../src/pipeline/store';

describe('LocalStore', () => {
  let root: string;
  beforeEach(() => { root = fs.mkdtempSync(path.join(os.tmpdir(), 'local-store-')); });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('makes directories on first need, overwrites in place, and leaves no temporary files', async () => {
    const store = new LocalStore(root);
    await store.put('thumbnails/ab/cd/x.jpg', Buffer.from('one'), 'image/jpeg');
    await store.put('thumbnails/ab/cd/y.jpg', Buffer.from('two'), 'image/jpeg');
    await store.put('thumbnails/ab/cd/x.jpg', Buffer.from('three'), 'image/jpeg');
    expect((await store.get('thumbnails/ab/cd/x.jpg'))!.toString()).toBe('three');
    expect((await store.get('thumbnails/ab/cd/y.jpg'))!.toString()).toBe('two');
    expect(fs.readdirSync(path.join(root, 'thumbnails/ab/cd')).sort()).toEqual(['x.jpg', 'y.jpg']);
    expect(await store.get('thumbnails/ab/cd/missing.jpg')).toBeUndefined();
  });

  it('writes a large body (a kept original) from the thread pool, whole: the event loop is not held while it is copied', async () => {
    const store = new LocalStore(root);
    await store.put('originals/ab/warm.jpg', Buffer.from('x'), 'image/jpeg');
    const big = Buffer.alloc(8 * 1024 * 1024);
    for (let i = 0; i < big.length; i += 4096) big[i] = i % 251;
    // Which call copies the bytes is what matters: how far a pool thread has got when the caller's
    // code goes on is a race (a fast disk had all 8 MB in place before a stat could look).
    const writeSync = jest.spyOn(fs, 'writeSync');
    const write = jest.spyOn(fs, 'write');
    try {
      const put = store.put('originals/ab/big.jpg', big, 'image/jpeg');
      try {
        expect(writeSync).not.toHaveBeenCalled();
      } finally {
        await put;
      }
      expect(write).toHaveBeenCalled();
      expect(write.mock.calls.every((call) => (call as unknown[])[1] === big)).toBe(true);
    } finally {
      writeSync.mockRestore();
      write.mockRestore();
    }
    expect((await store.get('originals/ab/big.jpg'))!.equals(big)).toBe(true);
    expect(fs.readdirSync(path.join(root, 'originals/ab')).sort()).toEqual(['big.jpg', 'warm.jpg']);
  });

  it('is verified before a crawl starts: made when missing, a clear error when it cannot be', async () => {
    await expect(new LocalStore(path.join(root, 'new', 'store')).verify()).resolves.toBeUndefined();
    expect(fs.statSync(path.join(root, 'new', 'store')).isDirectory()).toBe(true);
    fs.writeFileSync(path.join(root, 'file'), 'x');
    await expect(new LocalStore(path.join(root, 'file', 'store')).verify()).rejects.toThrow(
      /^cannot use the local directory .*\/file\/store: .*\/file is a file, not a directory \(choose a writable directory: --out, --data-dir or CRAWL_LOCAL_STORE_DIR\)$/);
  });

  it('is verified by writing: a full disk is found before the crawl starts, and nothing is left behind', async () => {
    const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    const write = jest.spyOn(fsPromises, 'writeFile').mockRejectedValueOnce(enospc);
    try {
      await expect(new LocalStore(path.join(root, 'full')).verify()).rejects.toThrow(
        /^cannot use the local directory .*\/full: ENOSPC: no space left on device, write \(free some space there, or choose another directory: --out, --data-dir or CRAWL_LOCAL_STORE_DIR\)$/);
      await expect(new LocalStore(path.join(root, 'fine')).verify()).resolves.toBeUndefined();
      expect(write).toHaveBeenCalledTimes(2);
      expect(fs.readdirSync(path.join(root, 'fine'))).toEqual([]);
    } finally {
      write.mockRestore();
    }
  });

  it('recreates a directory removed behind its back', async () => {
    const store = new LocalStore(root);
    await store.put('records/s/a.ndjson', '{}\n', 'application/x-ndjson');
    fs.rmSync(path.join(root, 'records'), { recursive: true });
    await store.put('records/s/b.ndjson', '{"b":1}\n', 'application/x-ndjson');
    expect((await store.get('records/s/b.ndjson'))!.toString()).toBe('{"b":1}\n');
  });

  it('lists the keys under a prefix, down through directories, without writes in progress', async () => {
    const store = new LocalStore(root);
    for (const k of ['work/m1/a/chunk-000000.txt', 'work/m1/a/chunk-000000.done', 'work/m1/a/chunk-000001.txt', 'work/m1/ab/chunk-000000.done', 'work/m2/a/chunk-000000.done']) {
      await store.put(k, 'x', 'text/plain');
    }
    fs.writeFileSync(path.join(root, 'work/m1/a/chunk-000001.done.4242.k3j9.tmp'), 'half');
    const list = async (prefix: string) => { const keys: string[] = []; for await (const k of store.list(prefix)) keys.push(k); return keys.sort(); };
    expect(await list('work/m1/a/chunk-')).toEqual(['work/m1/a/chunk-000000.done', 'work/m1/a/chunk-000000.txt', 'work/m1/a/chunk-000001.txt']);
    expect(await list('work/m1/a')).toEqual(['work/m1/a/chunk-000000.done', 'work/m1/a/chunk-000000.txt', 'work/m1/a/chunk-000001.txt', 'work/m1/ab/chunk-000000.done']);
    expect(await list('work/m3/')).toEqual([]);
    await expect(list('../')).rejects.toThrow(/unsafe object key/);
  });

  it('lists the keys with the time each file was last written', async () => {
    const store = new LocalStore(root);
    // More than are looked at in one go.
    const keys = Array.from({ length: 70 }, (_, n) => `records/s/c0-b${String(n).padStart(2, '0')}-g1.ndjson`);
    for (const k of keys) await store.put(k, '{}\n', 'application/x-ndjson');
    const hourAgo = new Date(Date.now() - 3_600_000);
    fs.utimesSync(path.join(root, keys[7]!), hourAgo, hourAgo);
    const written = new Map<string, number>();
    for await (const o of store.listModified('records/s/')) written.set(o.key, o.modifiedMs);
    expect([...written.keys()].sort()).toEqual(keys);
    // To the millisecond (utimes takes seconds as a float: it may land a millisecond short).
    expect(Math.abs(written.get(keys[7]!)! - hourAgo.getTime())).toBeLessThanOrEqual(1);
    expect(Math.abs(written.get(keys[69]!)! - Date.now())).toBeLessThan(60_000);
  });

  describe('durability of names', () => {
    type Synced = { ino: number; dir: boolean; at: number };
    let synced: Synced[];
    let dirDelayMs = 0;
    let dirError: NodeJS.ErrnoException | undefined;
    beforeEach(() => {
      synced = [];
      dirDelayMs = 0;
      dirError = undefined;
      const real = fs.fsync;
      jest.spyOn(fs, 'fsync').mockImplementation(((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
        const st = fs.fstatSync(fd);
        real(fd, (err) => {
          const finish = () => {
            synced.push({ ino: st.ino, dir: st.isDirectory(), at: performance.now() });
            cb(st.isDirectory() && dirError ? dirError : err);
          };
          if (st.isDirectory() && dirDelayMs) setTimeout(finish, dirDelayMs);
          else finish();
        });
      }) as typeof fs.fsync);
    });
    afterEach(() => jest.restoreAllMocks());
    const dirSyncsOf = (p: string) => synced.filter((s) => s.dir && s.ino === fs.statSync(p).ino);

    it('syncs the directory after the rename, and every directory it had to make, before put returns', async () => {
      const store = new LocalStore(root);
      await store.put('thumbnails/ab/x.jpg', Buffer.from('one'), 'image/jpeg');
      // The file's own directory holds the new name; root and thumbnails/ hold the new directories'.
      for (const d of ['thumbnails/ab', 'thumbnails', '']) expect(dirSyncsOf(path.join(root, d))).toHaveLength(1);
      synced = [];
      await store.put('thumbnails/ab/y.jpg', Buffer.from('two'), 'image/jpeg');
      expect(dirSyncsOf(path.join(root, 'thumbnails/ab'))).toHaveLength(1);
      expect(dirSyncsOf(path.join(root, 'thumbnails'))).toHaveLength(0);
      expect(synced.filter((s) => !s.dir)).toHaveLength(1);
    });

    it('shares one directory fsync between the puts that arrive while one runs', async () => {
      const store = new LocalStore(root);
      await store.put('records/s/first.ndjson', '{}\n', 'application/x-ndjson');
      synced = [];
      dirDelayMs = 1000;
      const resolvedAt: number[] = [];
      const first = store.put('records/s/a.ndjson', 'a\n', 'application/x-ndjson').then(() => resolvedAt.push(performance.now()));
      // Wait until the first put's directory fsync is under way, then put 20 more into the same directory.
      while (!fs.existsSync(path.join(root, 'records/s/a.ndjson'))) await new Promise((r) => setImmediate(r));
      await Promise.all([first, ...Array.from({ length: 20 }, (_, i) => store.put(`records/s/r${i}.ndjson`, `${i}\n`, 'application/x-ndjson').then(() => resolvedAt.push(performance.now())))]);
      const dirSyncs = dirSyncsOf(path.join(root, 'records/s'));
      // One for the first put; the 20 renamed while it ran wait for one more, which starts after it.
      expect(dirSyncs).toHaveLength(2);
      expect(resolvedAt.filter((t) => t >= dirSyncs[1]!.at)).toHaveLength(20);
    });

    it('fails the put when its directory cannot be synced', async () => {
      const store = new LocalStore(root);
      await store.put('records/s/a.ndjson', 'a\n', 'application/x-ndjson');
      dirError = Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
      await expect(store.put('records/s/b.ndjson', 'b\n', 'application/x-ndjson')).rejects.toThrow(/EIO/);
      dirError = Object.assign(new Error('EINVAL: invalid argument, fsync'), { code: 'EINVAL' });
      await expect(store.put('records/s/c.ndjson', 'c\n', 'application/x-ndjson')).resolves.toBeUndefined();
    });
  });

  it('refuses keys that would leave its directory', async () => {
    const store = new LocalStore(root);
    await expect(store.put('../escape.txt', 'x', 'text/plain')).rejects.toThrow(/unsafe object key/);
    await expect(store.put('/etc/x', 'x', 'text/plain')).rejects.toThrow(/unsafe object key/);
  });
});
