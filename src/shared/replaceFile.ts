import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { isDiskFull } from './diskRoom';

/**
 * Writes `file` with what `fill` writes, replacing it whole once complete and synced: a reader
 * never sees half of it, and a `fill` that fails leaves the old file and nothing else behind.
 * A name ending in `.gz` is written gzip-compressed (records of a large crawl are hundreds of
 * megabytes of text, and a `.gz` file that is plain text fails `zcat` and every reader after it).
 */
export async function replaceFile<T>(file: string, fill: (write: (text: string) => void) => Promise<T>): Promise<T> {
  // Found before `fill` runs: the rename at the end would fail only after the whole export, and
  // leave the temporary file beside the directory.
  if (isDirectory(file)) throw aDirectory(file);
  const tmp = `${file}.${process.pid}.tmp`;
  let fd: number;
  try {
    fd = fs.openSync(tmp, 'w');
  } catch (err) {
    throw writeError(file, err);
  }
  const put = (data: string | Buffer) => {
    try {
      if (typeof data === 'string') fs.writeSync(fd, data);
      else for (let at = 0; at < data.length;) at += fs.writeSync(fd, data, at);
    } catch (err) {
      throw writeError(file, err);
    }
  };
  const gzip = /\.gz$/i.test(file) ? new GzipMembers(put) : undefined;
  let result: T;
  try {
    result = await fill(gzip ? (text) => gzip.write(text) : put);
    gzip?.end();
    try {
      fs.fsyncSync(fd);
    } catch (err) {
      throw writeError(file, err);
    }
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  try {
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw writeError(file, err);
  }
  return result;
}

/**
 * Fails as replaceFile would, before any work is done for it: `file` a directory, its directory
 * missing or not writable. For a file written after a long piece of work (an export's cursor).
 */
export function checkWritable(file: string): void {
  if (isDirectory(file)) throw aDirectory(file);
  const probe = `${file}.${process.pid}.tmp`;
  try {
    fs.closeSync(fs.openSync(probe, 'w'));
    fs.rmSync(probe, { force: true });
  } catch (err) {
    throw writeError(file, err);
  }
}

function isDirectory(file: string): boolean {
  try {
    return fs.statSync(file).isDirectory();
  } catch {
    return false;
  }
}

function aDirectory(file: string): Error {
  return new Error(`cannot write ${file}: it is a directory; name a file in it (such as ${path.join(file, 'metadata.ndjson')})`);
}

/**
 * Which file could not be written and what to do. The system's own message names the temporary
 * file beside it (`open '.../x.ndjson.4711.tmp'`), which the user never named.
 */
function writeError(file: string, err: unknown): Error {
  const code = (err as { code?: unknown }).code;
  const dir = path.dirname(file);
  if (isDiskFull(err)) return new Error(`cannot write ${file}: ${(err as Error).message} (its disk is full: free some space there, or write the file elsewhere)`);
  if (code === 'ENOENT') return new Error(`cannot write ${file}: the directory ${dir} does not exist (create it first, or name a file in an existing directory)`);
  if (code === 'ENOTDIR') return new Error(`cannot write ${file}: ${dir} is not a directory`);
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return new Error(`cannot write ${file}: ${code === 'EROFS' ? 'its file system is read-only' : `permission denied in ${dir}`} (write the file elsewhere)`);
  if (code === 'EISDIR') return aDirectory(file);
  return new Error(`cannot write ${file}: ${(err as Error).message}`);
}

/** Text gathered to this size before it is compressed: bigger members compress better. */
const MEMBER_BYTES = 4 * 1024 * 1024;

/**
 * gzip written as consecutive members of about MEMBER_BYTES each (RFC 1952 allows any number;
 * gunzip, zcat, Python, Go, Java and Node read them as one stream), compressed synchronously, so
 * that the file is written as the text comes, as the uncompressed one is.
 */
class GzipMembers {
  private pending: string[] = [];
  private size = 0;
  private wrote = false;

  constructor(private readonly put: (data: Buffer) => void) {}

  write(text: string): void {
    this.pending.push(text);
    this.size += text.length;
    if (this.size >= MEMBER_BYTES) this.flush();
  }

  end(): void {
    // An empty export is still a gzip file (of nothing), not an empty one.
    if (this.size || !this.wrote) this.flush();
  }

  private flush(): void {
    this.put(zlib.gzipSync(this.pending.join('')));
    this.wrote = true;
    this.pending = [];
    this.size = 0;
  }
}
