import fs from 'node:fs';
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

  it('is verified before a crawl starts: made when missing, a clear error when it cannot be', async () => {
    await expect(new LocalStore(path.join(root, 'new', 'store')).verify()).resolves.toBeUndefined();
    expect(fs.statSync(path.join(root, 'new', 'store')).isDirectory()).toBe(true);
    fs.writeFileSync(path.join(root, 'file'), 'x');
    await expect(new LocalStore(path.join(root, 'file', 'store')).verify()).rejects.toThrow(
      /^cannot use the local directory .*\/file\/store: ENOTDIR: not a directory.*\(choose a writable directory: --out, --data-dir or CRAWL_LOCAL_STORE_DIR\)$/);
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

  it('refuses keys that would leave its directory', async () => {
    const store = new LocalStore(root);
    await expect(store.put('../escape.txt', 'x', 'text/plain')).rejects.toThrow(/unsafe object key/);
    await expect(store.put('/etc/x', 'x', 'text/plain')).rejects.toThrow(/unsafe object key/);
  });
});
