import fs from 'node:fs';
import { TextDecoder } from 'node:util';
import zlib from 'node:zlib';

/**
 * A manifest's bytes as its lines are read: UTF-8 text, as stored or gunzipped when the file is
 * gzip (manifests of millions of URLs are usually kept compressed), and transcoded when the text
 * is UTF-16 (what Windows PowerShell's `>` and Excel's "Unicode Text" write: read as bytes, every
 * line was a bad one). Gzip is known by its first bytes, not its name; other compressions are
 * named in an error rather than read as garbage lines.
 */

const GZIP = Buffer.from([0x1f, 0x8b]);
const OTHER: [string, Buffer][] = [
  ['zstd', Buffer.from([0x28, 0xb5, 0x2f, 0xfd])],
  ['xz', Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])],
  ['bzip2', Buffer.from('BZh')],
  ['zip', Buffer.from([0x50, 0x4b, 0x03, 0x04])],
];

function fileHead(file: string, length: number): Buffer {
  const head = Buffer.alloc(length);
  const fd = fs.openSync(file, 'r');
  try {
    return head.subarray(0, fs.readSync(fd, head, 0, length, 0));
  } finally {
    fs.closeSync(fd);
  }
}

/** 'gzip' for a gzip file, undefined for one read as is; throws for a compression we do not read. */
export function manifestCompression(file: string): 'gzip' | undefined {
  const head = fileHead(file, 6);
  const starts = (magic: Buffer) => head.length >= magic.length && head.subarray(0, magic.length).equals(magic);
  if (starts(GZIP)) return 'gzip';
  const other = OTHER.find(([, magic]) => starts(magic));
  if (other) throw new Error(`manifest ${file} is ${other[0]}-compressed: decompress it first, or compress it with gzip, which is read as it is`);
  return undefined;
}

/** What a file given as a manifest by mistake usually is, by its first bytes. */
const KNOWN_BINARY: [string, Buffer][] = [
  ['a JPEG image', Buffer.from([0xff, 0xd8, 0xff])],
  ['a PNG image', Buffer.from([0x89, 0x50, 0x4e, 0x47])],
  ['a GIF image', Buffer.from('GIF8')],
  ['a PDF document', Buffer.from('%PDF')],
  ['an SQLite database', Buffer.from('SQLite format 3\0')],
];

/**
 * Throws unless the file is text: a binary file given as a manifest by mistake (an image, the
 * catalogue's spreadsheet) would otherwise be reported as thousands of bad lines. Text never
 * holds a NUL byte (UTF-16, which does, is told apart first); 64 KiB are looked at. Also throws
 * for a compression that is not read (manifestCompression).
 */
export function assertTextManifest(file: string): void {
  if (manifestCompression(file) === 'gzip') return; // its text is checked line by line
  const head = fileHead(file, 64 * 1024);
  if (utf16Of(head)) return;
  const nul = head.indexOf(0);
  if (nul < 0) return;
  const known = KNOWN_BINARY.find(([, magic]) => head.subarray(0, magic.length).equals(magic));
  const what = known ? `it is ${known[0]}` : `it has a NUL byte at offset ${nul}`;
  throw new Error(`manifest ${file} is not text (${what}): a manifest lists URLs, as NDJSON, CSV or one URL a line`);
}

type Utf16 = 'utf-16le' | 'utf-16be';

/**
 * UTF-16 known by its byte-order mark, or without one by the NUL bytes that ASCII characters
 * have in it (a manifest's first characters are ASCII; UTF-8 text never holds a NUL).
 */
export function utf16Of(head: Buffer): Utf16 | undefined {
  if (head.length >= 2 && head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
  if (head.length >= 2 && head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
  if (head.length >= 4 && head[0] !== 0 && head[1] === 0 && head[2] !== 0 && head[3] === 0) return 'utf-16le';
  if (head.length >= 4 && head[0] === 0 && head[1] !== 0 && head[2] === 0 && head[3] !== 0) return 'utf-16be';
  return undefined;
}

/**
 * The manifest's text as UTF-8 bytes, streamed: a UTF-16 manifest is the same manifest as its
 * UTF-8 text (no byte-order mark), gzip or not, and one whose lines end in a carriage return
 * alone is the same manifest as its text with line feeds (see lineFeeds). A damaged gzip file
 * fails with a message saying so.
 */
export async function* manifestBytes(file: string): AsyncGenerator<Buffer> {
  yield* lineFeeds(textBytes(file));
}

async function* textBytes(file: string): AsyncGenerator<Buffer> {
  if (manifestCompression(file) !== 'gzip') {
    yield* asUtf8(fs.createReadStream(file) as AsyncIterable<Buffer>);
    return;
  }
  const raw = fs.createReadStream(file);
  const gunzip = zlib.createGunzip();
  raw.on('error', (err) => gunzip.destroy(err));
  raw.pipe(gunzip);
  try {
    yield* asUtf8(gunzip as AsyncIterable<Buffer>);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code?.startsWith('Z_')) throw new Error(`manifest ${file} is damaged gzip: ${e.message}`);
    throw err;
  } finally {
    raw.destroy();
    gunzip.destroy();
  }
}

/**
 * The first `limit` bytes of `bytes`, of which those after `lastBreak` (the end of the last line
 * break in them) are a last line without its line break. `onMore` hears when there were more
 * bytes: the file is still being written, so that last line is left out, as the rest of it is
 * yet to come. Fewer bytes is an error: the file changed since it was first read.
 */
export async function* firstBytes(bytes: AsyncIterable<Buffer>, limit: number, lastBreak: number, file: string, onMore: () => void): AsyncGenerator<Buffer> {
  let at = 0;
  const tail: Buffer[] = [];
  for await (const chunk of bytes) {
    const end = at + chunk.length;
    if (at < lastBreak) yield chunk.subarray(0, Math.min(chunk.length, lastBreak - at));
    if (end > lastBreak) tail.push(chunk.subarray(Math.max(0, lastBreak - at), Math.max(0, Math.min(chunk.length, limit - at))));
    at = end;
    if (at > limit) {
      onMore();
      return;
    }
  }
  if (at < limit) throw new Error(`manifest ${file} is shorter than when it was first read a moment ago (replaced or truncated while being started): start it again once nothing writes to it`);
  if (tail.length > 0) yield Buffer.concat(tail);
}

const CR = 0x0d;
const LF = 0x0a;

/**
 * A carriage return that no line feed follows is a line break: classic Mac line ends, which
 * Excel for Mac's "CSV (Macintosh)" still writes. Read as they were, such a file was one line:
 * a CSV of 30 URLs was "nothing to crawl: lists no URLs", a URL list one bad line. A
 * manifest's text never holds one otherwise (a URL cannot, JSON escapes it in a string).
 * Byte for byte, so offsets into the file stay those of its text; CRLF stays as it is.
 */
export async function* lineFeeds(bytes: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  // A chunk's last byte when it is a CR: what it is depends on the next chunk's first.
  let heldCr = false;
  for await (const chunk of bytes) {
    if (chunk.length === 0) continue;
    if (heldCr) yield Buffer.from([chunk[0] === LF ? CR : LF]);
    heldCr = chunk[chunk.length - 1] === CR;
    const body = heldCr ? chunk.subarray(0, chunk.length - 1) : chunk;
    let out = body;
    for (let i = body.indexOf(CR); i >= 0; i = body.indexOf(CR, i + 1)) {
      // At the end of `body`, the byte after it is the held CR: this one is alone.
      if (i + 1 < body.length && body[i + 1] === LF) continue;
      if (out === body) out = Buffer.from(body);
      out[i] = LF;
    }
    if (out.length > 0) yield out;
  }
  if (heldCr) yield Buffer.from([LF]);
}

async function* asUtf8(bytes: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  let decoder: TextDecoder | undefined;
  // A lone surrogate or an odd last byte becomes U+FFFD, which makes its line a bad one.
  const utf8 = (b: Buffer) => (decoder ? Buffer.from(decoder.decode(b, { stream: true })) : b);
  /** The first bytes, until there are four to decide the encoding on, however the stream cuts them. */
  let head: Buffer | undefined = Buffer.alloc(0);
  const decide = () => {
    const utf16 = utf16Of(head!);
    if (utf16) decoder = new TextDecoder(utf16);
    const text = utf8(head!);
    head = undefined;
    return text;
  };
  for await (const chunk of bytes) {
    let out: Buffer;
    if (head) {
      head = Buffer.concat([head, chunk]);
      if (head.length < 4) continue;
      out = decide();
    } else {
      out = utf8(chunk);
    }
    if (out.length > 0) yield out;
  }
  if (head && head.length > 0) {
    const out = decide();
    if (out.length > 0) yield out;
  }
  if (decoder) {
    const rest = decoder.decode();
    if (rest) yield Buffer.from(rest);
  }
}
