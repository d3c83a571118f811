import fs from 'node:fs';
import zlib from 'node:zlib';

/**
 * A manifest's bytes as its lines are read: as stored, or gunzipped when the file is gzip
 * (manifests of millions of URLs are usually kept compressed). Gzip is known by its first bytes,
 * not its name; other compressions are named in an error rather than read as garbage lines.
 */

const GZIP = Buffer.from([0x1f, 0x8b]);
const OTHER: [string, Buffer][] = [
  ['zstd', Buffer.from([0x28, 0xb5, 0x2f, 0xfd])],
  ['xz', Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])],
  ['bzip2', Buffer.from('BZh')],
  ['zip', Buffer.from([0x50, 0x4b, 0x03, 0x04])],
];

/** 'gzip' for a gzip file, undefined for one read as is; throws for a compression we do not read. */
export function manifestCompression(file: string): 'gzip' | undefined {
  const head = Buffer.alloc(6);
  const fd = fs.openSync(file, 'r');
  let n: number;
  try {
    n = fs.readSync(fd, head, 0, head.length, 0);
  } finally {
    fs.closeSync(fd);
  }
  const starts = (magic: Buffer) => n >= magic.length && head.subarray(0, magic.length).equals(magic);
  if (starts(GZIP)) return 'gzip';
  const other = OTHER.find(([, magic]) => starts(magic));
  if (other) throw new Error(`manifest ${file} is ${other[0]}-compressed: decompress it first, or compress it with gzip, which is read as it is`);
  return undefined;
}

/** The manifest's (decompressed) bytes, streamed. A damaged gzip file fails with a message saying so. */
export async function* manifestBytes(file: string): AsyncGenerator<Buffer> {
  if (manifestCompression(file) !== 'gzip') {
    yield* fs.createReadStream(file) as AsyncIterable<Buffer>;
    return;
  }
  const raw = fs.createReadStream(file);
  const gunzip = zlib.createGunzip();
  raw.on('error', (err) => gunzip.destroy(err));
  raw.pipe(gunzip);
  try {
    yield* gunzip as AsyncIterable<Buffer>;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code?.startsWith('Z_')) throw new Error(`manifest ${file} is damaged gzip: ${e.message}`);
    throw err;
  } finally {
    raw.destroy();
    gunzip.destroy();
  }
}
