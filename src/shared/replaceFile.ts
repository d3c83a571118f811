import fs from 'node:fs';

/**
 * Writes `file` with what `fill` writes, replacing it whole once complete and synced: a reader
 * never sees half of it, and a `fill` that fails leaves the old file and nothing else behind.
 */
export async function replaceFile<T>(file: string, fill: (write: (text: string) => void) => Promise<T>): Promise<T> {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  let result: T;
  try {
    result = await fill((text) => { fs.writeSync(fd, text); });
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  fs.renameSync(tmp, file);
  return result;
}
