import { firstBytes, lineFeeds } from './manifestBytes';

async function* pieces(text: string, size: number): AsyncGenerator<Buffer> {
  for (let at = 0; at < text.length; at += size) yield Buffer.from(text.slice(at, at + size));
}

async function read(text: string, size: number, limit: number, lastBreak: number): Promise<{ text: string; more: boolean }> {
  let more = false;
  const out: Buffer[] = [];
  for await (const b of firstBytes(pieces(text, size), limit, lastBreak, 'm.txt', () => { more = true; })) out.push(b);
  return { text: Buffer.concat(out).toString(), more };
}

describe('firstBytes (the bytes a manifest id is of)', () => {
  // "a\nbb\ncc" was read first: 7 bytes, its last line break ending at 5.
  it.each([1, 2, 3, 5, 7, 100])('keeps a last line without a line break when nothing was added (pieces of %i)', async (size) => {
    expect(await read('a\nbb\ncc', size, 7, 5)).toEqual({ text: 'a\nbb\ncc', more: false });
  });

  it.each([1, 2, 3, 5, 7, 8, 100])('leaves out the last line, only part-written, and what follows when the file grew (pieces of %i)', async (size) => {
    expect(await read('a\nbb\nccc\nd\n', size, 7, 5)).toEqual({ text: 'a\nbb\n', more: true });
  });

  it.each([1, 4, 100])('stops at the last line break when it ends the bytes read first (pieces of %i)', async (size) => {
    expect(await read('a\nbb\ncc\n', size, 5, 5)).toEqual({ text: 'a\nbb\n', more: true });
    expect(await read('a\nbb\n', size, 5, 5)).toEqual({ text: 'a\nbb\n', more: false });
  });

  it('fails when the file is shorter than when first read', async () => {
    await expect(read('a\nb', 10, 7, 5)).rejects.toThrow('manifest m.txt is shorter than when it was first read a moment ago');
  });
});

describe('lineFeeds (classic Mac line ends)', () => {
  async function feeds(text: string, size: number): Promise<string> {
    const out: Buffer[] = [];
    for await (const b of lineFeeds(pieces(text, size))) out.push(b);
    return Buffer.concat(out).toString();
  }

  // Cut anywhere, a CR before an LF must stay a CRLF, and a lone CR must become an LF, also
  // when the cut falls between the two or right after a CR that ends the text.
  it.each([1, 2, 3, 4, 7, 100])('turns a carriage return alone into a line feed, byte for byte, and leaves CRLF (pieces of %i)', async (size) => {
    expect(await feeds('a\rbb\r\ncc\r\rd\n\re\r', size)).toBe('a\nbb\r\ncc\n\nd\n\ne\n');
    expect(await feeds('\r\r\n\r', size)).toBe('\n\r\n\n');
    expect(await feeds('no breaks', size)).toBe('no breaks');
  });
});
