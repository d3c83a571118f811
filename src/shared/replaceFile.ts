import fs from 'node:fs';
import { isDiskFull } from './diskRoom';

/**
 * Writes `file` with what `fill` writes, replacing it whole once complete and synced: a reader
 * never sees half of it, and a `fill` that fails leaves the old file and nothing else behind.
 */
export async function replaceFile<T>(file: string, fill: (write: (text: string) => void) => Promise<T>): Promise<T> {
  const tmp = `${file}.${process.pid}.tmp`;
  let fd: number;
  try {
    fd = fs.openSync(tmp, 'w');
  } catch (err) {
    throw writeError(file, err);
  }
  let result: T;
  try {
    result = await fill((text) => {
      try {
        fs.writeSync(fd, text);
      } catch (err) {
        throw writeError(file, err);
      }
    });
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

/** Which file could not be written, and for a full disk what to do (the bare "ENOSPC: no space left on device, write" named neither). */
function writeError(file: string, err: unknown): Error {
  return new Error(`cannot write ${file}: ${(err as Error).message}${isDiskFull(err) ? ' (its disk is full: free some space there, or write the file elsewhere)' : ''}`);
}
