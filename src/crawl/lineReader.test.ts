import { readLines, type Line } from './lineReader';

async function* chunks(text: string, size: number): AsyncGenerator<Buffer> {
  const bytes = Buffer.from(text, 'utf8');
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function lines(text: string, size: number, max = 45): Promise<Line[]> {
  const out: Line[] = [];
  for await (const batch of readLines(chunks(text, size), max)) out.push(...batch);
  return out;
}

describe('readLines', () => {
  it('gives the same lines whatever the chunk size, multi-byte characters cut across chunks included', async () => {
    const text = 'héllo wörld\r\n\nsecond ✓ line\nlast without newline';
    const expected = [
      { line: 1, text: 'héllo wörld\r' },
      { line: 2, text: '' },
      { line: 3, text: 'second ✓ line' },
      { line: 4, text: 'last without newline' },
    ];
    for (const size of [1, 2, 3, 5, 7, 64]) expect(await lines(text, size, 100)).toEqual(expected);
  });

  it('skips an over-long line with its length and first bytes, and reads the lines after it', async () => {
    const long = `[${'x'.repeat(58)}`;
    for (const size of [1, 4, 16, 1024]) {
      expect(await lines(`ok\n${long}\nafter\n${'y'.repeat(46)}`, size)).toEqual([
        { line: 1, text: 'ok' },
        { line: 2, tooLong: { chars: 59, head: long.slice(0, 40) } },
        { line: 3, text: 'after' },
        { line: 4, tooLong: { chars: 46, head: 'y'.repeat(40) } },
      ]);
    }
    // Exactly the limit is allowed.
    expect(await lines(`${'z'.repeat(45)}\n`, 3)).toEqual([{ line: 1, text: 'z'.repeat(45) }]);
  });

  it('holds no more than about a line in memory for a line of 64 MiB', async () => {
    async function* huge(): AsyncGenerator<Buffer> {
      const block = Buffer.alloc(1 << 20, 0x61);
      for (let i = 0; i < 64; i++) yield block;
      yield Buffer.from('\nhttps://a.example/1.jpg\n');
    }
    const before = process.memoryUsage().arrayBuffers;
    let most = 0;
    const out: Line[] = [];
    for await (const batch of readLines(huge(), 64 * 1024)) {
      out.push(...batch);
      most = Math.max(most, process.memoryUsage().arrayBuffers - before);
    }
    expect(out).toEqual([{ line: 1, tooLong: { chars: 64 << 20, head: 'a'.repeat(40) } }, { line: 2, text: 'https://a.example/1.jpg' }]);
    expect(most).toBeLessThan(16 << 20);
  });
});
