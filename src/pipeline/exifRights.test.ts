import { readExifRights } from './exifRights';

/** An EXIF block as a JPEG's APP1 carries it: header, TIFF header, IFD0 with the given entries. */
function exifBlock(entries: { tag: number; type: number; value: Buffer; count?: number; offset?: number }[], opts: { bigEndian?: boolean; header?: boolean } = {}): Buffer {
  const le = !opts.bigEndian;
  const ifdSize = 2 + entries.length * 12 + 4;
  const dataStart = 8 + ifdSize;
  const data: Buffer[] = [];
  let dataAt = dataStart;
  const ifd = Buffer.alloc(ifdSize);
  const w16 = (b: Buffer, v: number, at: number) => (le ? b.writeUInt16LE(v, at) : b.writeUInt16BE(v, at));
  const w32 = (b: Buffer, v: number, at: number) => (le ? b.writeUInt32LE(v, at) : b.writeUInt32BE(v, at));
  w16(ifd, entries.length, 0);
  entries.forEach((e, k) => {
    const at = 2 + k * 12;
    w16(ifd, e.tag, at);
    w16(ifd, e.type, at + 2);
    w32(ifd, e.count ?? e.value.length, at + 4);
    if (e.offset !== undefined) w32(ifd, e.offset, at + 8);
    else if (e.value.length <= 4) e.value.copy(ifd, at + 8);
    else {
      w32(ifd, dataAt, at + 8);
      data.push(e.value);
      dataAt += e.value.length;
    }
  });
  const head = Buffer.alloc(8);
  head.write(le ? 'II' : 'MM', 0, 'latin1');
  w16(head, 0x2a, 2);
  w32(head, 8, 4);
  return Buffer.concat([opts.header === false ? Buffer.alloc(0) : Buffer.from('Exif\0\0', 'latin1'), head, ifd, ...data]);
}

const ascii = (s: string, encoding: BufferEncoding = 'utf8') => Buffer.concat([Buffer.from(s, encoding), Buffer.from([0])]);

describe('EXIF Artist and Copyright', () => {
  it('reads them from IFD0 in either byte order, with or without the APP1 header', () => {
    const entries = [{ tag: 0x010f, type: 2, value: ascii('Camera Maker') }, { tag: 0x013b, type: 2, value: ascii('Ada Lovelace') }, { tag: 0x8298, type: 2, value: ascii('CC BY 4.0') }];
    expect(readExifRights(exifBlock(entries))).toEqual({ artist: 'Ada Lovelace', copyright: 'CC BY 4.0' });
    expect(readExifRights(exifBlock(entries, { bigEndian: true, header: false }))).toEqual({ artist: 'Ada Lovelace', copyright: 'CC BY 4.0' });
  });

  it('reads UTF-8 and Latin-1 text, short values kept in the entry, and the two parts of a copyright', () => {
    expect(readExifRights(exifBlock([{ tag: 0x013b, type: 2, value: ascii('Zoë Müller') }, { tag: 0x8298, type: 2, value: Buffer.from('© Ed\0© Editor\0', 'latin1') }])))
      .toEqual({ artist: 'Zoë Müller', copyright: '© Ed; © Editor' });
    expect(readExifRights(exifBlock([{ tag: 0x013b, type: 2, value: ascii('Bo') }]))).toEqual({ artist: 'Bo', copyright: null });
  });

  it('reads a crafted block in bounded time and memory: thousands of entries claiming huge values at one offset', () => {
    // exif-reader took 26 s and ~3 GB for this block.
    const bomb = exifBlock(Array.from({ length: 5_000 }, (_, k) => ({ tag: k % 2 ? 0x013b : 0x9000 + k, type: 1, value: Buffer.alloc(0), count: 0xffffffff, offset: 0 })));
    const started = Date.now();
    const r = readExifRights(bomb);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(r.artist?.length ?? 0).toBeLessThanOrEqual(4096);
  });

  it('gives nothing for broken blocks: a bad byte order, an IFD past the end, a value past the end, a count past the end', () => {
    const none = { artist: null, copyright: null };
    expect(readExifRights(Buffer.from('Exif\0\0XX*\0\x08\0\0\0', 'latin1'))).toEqual(none);
    expect(readExifRights(undefined)).toEqual(none);
    expect(readExifRights(Buffer.from('II*\0\xff\xff\0\0', 'latin1'))).toEqual(none);
    expect(readExifRights(exifBlock([{ tag: 0x013b, type: 2, value: Buffer.alloc(0), count: 20, offset: 60_000 }]))).toEqual(none);
    const cut = exifBlock([{ tag: 0x013b, type: 2, value: ascii('Ada Lovelace') }]);
    expect(readExifRights(cut.subarray(0, cut.length - 6))).toEqual({ artist: 'Ada Lov', copyright: null });
    expect(readExifRights(exifBlock([{ tag: 0x013b, type: 3, value: Buffer.from([1, 0]) }]))).toEqual(none);
  });
});
