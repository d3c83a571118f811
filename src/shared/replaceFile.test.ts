import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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

  it('names the file a full disk could not take, and what to do', async () => {
    const file = path.join(dir, 'full.ndjson');
    jest.spyOn(fs, 'writeSync').mockImplementation(() => { throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }); });
    await expect(replaceFile(file, async (write) => { write('a\n'); })).rejects.toThrow(`cannot write ${file}: ENOSPC: no space left on device, write (its disk is full: free some space there, or write the file elsewhere)`);
    expect(fs.existsSync(file)).toBe(false);
  });
});
