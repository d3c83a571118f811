import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { replaceFile } from './replaceFile';

describe('replaceFile', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'replace-file-'));
  afterEach(() => jest.restoreAllMocks());

  it('replaces the file whole, and leaves the old one when filling fails', async () => {
    const file = path.join(dir, 'm.ndjson');
    await replaceFile(file, async (write) => { write('a\n'); write('b\n'); });
    expect(fs.readFileSync(file, 'utf8')).toBe('a\nb\n');
    await expect(replaceFile(file, async (write) => { write('c\n'); throw new Error('store failed'); })).rejects.toThrow('store failed');
    expect(fs.readFileSync(file, 'utf8')).toBe('a\nb\n');
    expect(fs.readdirSync(dir)).toEqual(['m.ndjson']);
  });

  it('compresses a file whose name ends in .gz, in members any gunzip reads as one stream', async () => {
    const file = path.join(dir, 'm.ndjson.gz');
    const line = `${JSON.stringify({ url: 'https://m.example/1.jpg', artist: 'Zoë' })}\n`;
    const lines = Math.ceil((9 * 1024 * 1024) / line.length); // more than two members' worth
    await replaceFile(file, async (write) => { for (let i = 0; i < lines; i += 1000) write(line.repeat(Math.min(1000, lines - i))); });
    const bytes = fs.readFileSync(file);
    expect(bytes.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    expect(bytes.length).toBeLessThan(line.length * lines / 20);
    // Three members: each begins with gzip's magic and method bytes.
    expect(bytes.toString('latin1').split('\x1f\x8b\x08').length - 1).toBeGreaterThanOrEqual(3);
    expect(zlib.gunzipSync(bytes).toString('utf8')).toBe(line.repeat(lines));
    await replaceFile(file, async () => undefined);
    expect(zlib.gunzipSync(fs.readFileSync(file)).toString()).toBe('');
    expect(fs.readdirSync(dir).filter((f) => f.includes('.tmp'))).toEqual([]);
  });

  it('names the file a full disk could not take, and what to do', async () => {
    const file = path.join(dir, 'full.ndjson');
    jest.spyOn(fs, 'writeSync').mockImplementation(() => { throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }); });
    await expect(replaceFile(file, async (write) => { write('a\n'); })).rejects.toThrow(`cannot write ${file}: ENOSPC: no space left on device, write (its disk is full: free some space there, or write the file elsewhere)`);
    expect(fs.existsSync(file)).toBe(false);
  });

  it('refuses a directory before filling, and leaves nothing beside it', async () => {
    const target = fs.mkdtempSync(path.join(dir, 'out-'));
    const fill = jest.fn(async () => undefined);
    await expect(replaceFile(target, fill)).rejects.toThrow(`cannot write ${target}: it is a directory; name a file in it (such as ${path.join(target, 'metadata.ndjson')})`);
    expect(fill).not.toHaveBeenCalled();
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('names the missing directory, not its temporary file', async () => {
    const file = path.join(dir, 'no-such-dir', 'x.ndjson');
    const err = await replaceFile(file, async () => undefined).catch((e: Error) => e);
    expect((err as Error).message).toBe(`cannot write ${file}: the directory ${path.dirname(file)} does not exist (create it first, or name a file in an existing directory)`);
  });

  it('removes its temporary file when the rename fails', async () => {
    const file = path.join(dir, 'renamed.ndjson');
    jest.spyOn(fs, 'renameSync').mockImplementation(() => { throw Object.assign(new Error('EACCES: permission denied, rename'), { code: 'EACCES' }); });
    await expect(replaceFile(file, async (write) => { write('a\n'); })).rejects.toThrow(`cannot write ${file}: permission denied in ${dir} (write the file elsewhere)`);
    expect(fs.readdirSync(dir).filter((f) => f.startsWith('renamed'))).toEqual([]);
  });
});
