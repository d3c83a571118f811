import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { readCatalog } from '../../src/crawl/catalog';
import { assertReadableManifest, assertManifestShape, manifestHasContent, readManifest, splitCsv, type ManifestEntry } from '../../src/crawl/manifest';

async function entries(name: string, text: string | Buffer): Promise<ManifestEntry[]> {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-')), name);
  fs.writeFileSync(file, text);
  const out: ManifestEntry[] = [];
  // `origin` is checked by its own test below; the others compare lines, URLs and sources.
  for await (const e of readManifest(file)) out.push('origin' in e ? (({ origin: _origin, ...rest }) => rest)(e) as ManifestEntry : e);
  return out;
}

describe('manifests', () => {
  it('tells a manifest of blank space (or nothing) from one with content, also past the first read', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-'));
    const has = (text: string) => { const f = path.join(dir, 'm'); fs.writeFileSync(f, text); return manifestHasContent(f); };
    expect(has('')).toBe(false);
    expect(has('\uFEFF\r\n \t\n')).toBe(false);
    expect(has(' '.repeat(200_000))).toBe(false);
    expect(has(`${'\n'.repeat(200_000)}https://a.example/1.jpg\n`)).toBe(true);
    expect(has('x')).toBe(true);
  });

  it('reads NDJSON, reports bad lines by number and keeps the rest', async () => {
    const got = await entries('m.ndjson', [
      '{"url":"https://a.example/1.jpg"}',
      '{"url":"https://a.example/2.jpg","source":"museum"}',
      'not json',
      '{"url":"ftp://a.example/3.jpg"}',
      '',
      '{"nourl":1}',
      '{"url":"https://user:pw@a.example/4.jpg"}',
      '{"url":"https://b.example:8443/5.jpg","source":"bad source!"}',
      '{"url":"http://B.example/6.jpg"}',
      '{"URL":"http://b.example/7.jpg"}',
      '{"url":"http://b.example/8.jpg","source":123}',
      '{"url":" http://b.example/9.jpg ","source":" museum "}',
      '{"url":123}',
      '{"url":["https://b.example/10.jpg"]}',
      '{"url":null}',
    ].join('\n'));
    expect(got).toEqual([
      { line: 1, url: 'https://a.example/1.jpg', source: 'a.example' },
      { line: 2, url: 'https://a.example/2.jpg', source: 'museum' },
      { line: 3, error: 'not valid JSON' },
      { line: 4, error: 'scheme ftp: not allowed (http and https only)' },
      { line: 6, error: 'missing "url"' },
      { line: 7, error: 'credentials in URLs are not allowed' },
      { line: 8, error: 'source must be 1-200 characters of letters, digits, ".", "_", ":" or "-", starting with a letter or digit (got "bad source!")' },
      { line: 9, url: 'http://b.example/6.jpg', source: 'b.example' },
      { line: 10, error: 'missing "url" (keys are case-sensitive: this line has "URL")' },
      { line: 11, error: 'source must be a name in quotes, such as "museum" (got 123)' },
      { line: 12, url: 'http://b.example/9.jpg', source: 'museum' },
      { line: 13, error: '"url" must be a string in quotes (got 123)' },
      { line: 14, error: '"url" must be a string in quotes (got ["https://b.example/10.jpg"])' },
      { line: 15, error: 'missing "url"' },
    ]);
  });

  it('gives each URL its origin (host and any port), also under a named source', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-')), 'm.ndjson');
    fs.writeFileSync(file, '{"url":"https://A.example:8443/1.jpg","source":"museum"}\n{"url":"http://b.example:80/2.jpg"}\n');
    const got: ManifestEntry[] = [];
    for await (const e of readManifest(file)) got.push(e);
    expect(got).toEqual([
      { line: 1, url: 'https://a.example:8443/1.jpg', source: 'museum', origin: 'a.example:8443' },
      { line: 2, url: 'http://b.example/2.jpg', source: 'b.example', origin: 'b.example' },
    ]);
  });

  it('makes one source of a host however its name is written (case, trailing dot, default port)', async () => {
    const got = await entries('m.txt', ['https://A.Example/1.jpg', 'https://a.example./2.jpg', 'http://a.example:80/3.jpg', 'https://a.example.:8443/4.jpg', 'http://[::1]:8080/5.jpg'].join('\n'));
    expect(got.map((e) => ('source' in e ? e.source : e.error))).toEqual(['a.example', 'a.example', 'a.example', 'a.example:8443', '[::1]:8080']);
  });

  it('reads CSV by its header and plain URL lists', async () => {
    expect(await entries('m.csv', 'source,url\nmuseum,"https://m.example/a,b.jpg"\n,https://x.example/1.png\n')).toEqual([
      { line: 2, url: 'https://m.example/a,b.jpg', source: 'museum' },
      { line: 3, url: 'https://x.example/1.png', source: 'x.example' },
    ]);
    expect(await entries('m.csv', 'link\nhttps://x.example/1.png\n')).toEqual([{ line: 1, error: expect.stringMatching(/no "url" column/) }]);
    expect(await entries('m.txt', '# comment\nhttps://x.example/1.png\nnot a url\n')).toEqual([
      { line: 2, url: 'https://x.example/1.png', source: 'x.example' },
      { line: 3, error: 'not a URL: "not a url"' },
    ]);
    expect(splitCsv('a,"b ""q"", c",d')).toEqual(['a', 'b "q", c', 'd']);
  });

  it('says what a line that is almost a URL lacks', async () => {
    const noScheme = ' (no scheme: a URL starts with https:// or http://)';
    const quoted = ' (remove the quotes or brackets around it)';
    const got = await entries('m.txt', ['www.x.example/1.png', 'x.example:8080/1.png', '//cdn.x.example/1.png', '"https://x.example/1.png"', '<https://x.example/1.png>', 'not a url'].join('\n'));
    expect(got.map((e) => ('error' in e ? e.error.slice(e.error.indexOf(' (')) : e))).toEqual([noScheme, noScheme, noScheme, quoted, quoted, expect.not.stringContaining('scheme')]);
  });

  it('refuses a CSV row with more columns than its header, which an unquoted comma in a URL makes', async () => {
    expect(await entries('m.csv', 'source,url\nmuseum,https://m.example/a,b.jpg\nmuseum,https://m.example/c.jpg,,\n,https://x.example/1.png\n')).toEqual([
      { line: 2, error: '3 columns where the header has 2: a URL with a comma in it must be in double quotes' },
      { line: 3, url: 'https://m.example/c.jpg', source: 'museum' },
      { line: 4, url: 'https://x.example/1.png', source: 'x.example' },
    ]);
  });

  it('reads a CSV record whose quoted cell holds line breaks as one, named by its first line', async () => {
    // A notes column exported from a spreadsheet: each line after a break was a bad line of its own.
    const csv = [
      'id,url,source,notes',
      '1,https://m.example/a.jpg,museum,"a caption',
      '',
      '# of two paragraphs, the second ""quoted"""',
      '2,"https://m.example/b,c.jpg",museum,one line',
      '3,https://m.example/d.jpg,,"more',
      'lines"',
    ].join('\r\n');
    expect(await entries('m.csv', csv)).toEqual([
      { line: 2, url: 'https://m.example/a.jpg', source: 'museum' },
      { line: 5, url: 'https://m.example/b,c.jpg', source: 'museum' },
      { line: 6, url: 'https://m.example/d.jpg', source: 'm.example' },
    ]);
  });

  it('reads a quote inside an unquoted cell as itself, and the lines after a quote left open on their own', async () => {
    // As spreadsheets read it: taken as an opening quote, it joined ",museum" into the URL.
    expect(await entries('m.csv', 'url,source\nhttps://m.example/x".jpg,museum\n')).toEqual([
      { line: 2, url: 'https://m.example/x%22.jpg', source: 'museum' },
    ]);
    // Joined, the quote opened on line 2 would take line 3's URL into its cell, up to line 4's quote.
    const open = 'url,source\n"https://m.example/x.jpg,museum\nhttps://m.example/y.jpg,museum\nhttps://m.example/z.jpg",museum\n';
    const got = await entries('m.csv', open);
    expect(got.map((e) => e.line)).toEqual([2, 3, 4]);
    expect(got[1]).toEqual({ line: 3, url: 'https://m.example/y.jpg', source: 'museum' });
    // Read alone, line 2's open quote took ",museum" into the URL: https://m.example/x.jpg,museum
    // is a URL, of another image, so it is a bad line saying why.
    const unclosedQuote = 'a double quote opens column 1 and is never closed, so the rest of the line was read into it: close or remove it';
    expect(got[0]).toEqual({ line: 2, error: unclosedQuote });
    // In the source column it swallowed the URL; "missing url" sent the reader to a column that is there.
    expect(await entries('m.csv', 'source,url\n"museum,https://m.example/1.jpg\nmuseum,"https://m.example/2.jpg\n')).toEqual([
      { line: 2, error: unclosedQuote },
      { line: 3, url: 'https://m.example/2.jpg', source: 'museum' },
    ]);
    // In the header's last column it took nothing else: a URL with a comma whose closing quote was forgotten.
    expect(await entries('m.csv', 'source,url\nmuseum,"https://m.example/a,b.jpg\n')).toEqual([{ line: 2, url: 'https://m.example/a,b.jpg', source: 'museum' }]);
    const rows = Array.from({ length: 150 }, (_, i) => `https://m.example/${i}.jpg,museum`);
    // Blank and comment lines after it are skipped as ever, not bad lines.
    const unclosed = await entries('m.csv', ['url,source,notes', 'https://m.example/open.jpg,museum,"never closed', '', '# a comment', ...rows].join('\n'));
    expect(unclosed[0]).toEqual({ line: 2, url: 'https://m.example/open.jpg', source: 'museum' });
    expect(unclosed.slice(1)).toEqual(rows.map((_, i) => ({ line: i + 5, url: `https://m.example/${i}.jpg`, source: 'museum' })));
  });

  it('reads the lines between two quotes left open in a caption column as the records they are', async () => {
    // Joined, lines 2 to 4 made one record whose caption held the URLs of lines 3 and 4.
    const csv = 'url,title\nhttp://a.example/1.jpg,"Sunset\nhttp://a.example/2.jpg,ok\nhttp://a.example/3.jpg,"Dawn\nhttp://a.example/4.jpg,end\n';
    expect(await entries('m.csv', csv)).toEqual([
      { line: 2, url: 'http://a.example/1.jpg', source: 'a.example' },
      { line: 3, url: 'http://a.example/2.jpg', source: 'a.example' },
      { line: 4, url: 'http://a.example/3.jpg', source: 'a.example' },
      { line: 5, url: 'http://a.example/4.jpg', source: 'a.example' },
    ]);
    // The second quote on the next line: that line opens a record of its own, and its caption goes on below.
    expect(await entries('m.csv', 'url,title\nhttp://a.example/1.jpg,"Sunset\nhttp://a.example/2.jpg,"multi\nline"\nhttp://a.example/3.jpg,x\n')).toEqual([
      { line: 2, url: 'http://a.example/1.jpg', source: 'a.example' },
      { line: 3, url: 'http://a.example/2.jpg', source: 'a.example' },
      { line: 5, url: 'http://a.example/3.jpg', source: 'a.example' },
    ]);
    // A caption's line holding a URL, with fewer columns than a record, is still the caption's.
    expect(await entries('m.csv', 'url,title,notes\nhttp://a.example/1.jpg,T,"see\nhttp://a.example/other.jpg, too"\n')).toEqual([
      { line: 2, url: 'http://a.example/1.jpg', source: 'a.example' },
    ]);
  });

  it('reads the separator from Excel\'s sep= line before the header, whatever the file is named', async () => {
    // Before, `sep=;` was taken for the header: "names no url column (its columns: sep=, )".
    for (const name of ['m.csv', 'm.txt']) {
      expect(await entries(name, 'sep=;\r\nurl;source\r\nhttp://a.example/1.jpg;museum\r\n"http://a.example/a;b.jpg";\r\n')).toEqual([
        { line: 3, url: 'http://a.example/1.jpg', source: 'museum' },
        { line: 4, url: 'http://a.example/a;b.jpg', source: 'a.example' },
      ]);
    }
    expect(await entries('m.csv', 'sep=\t\nsource\turl\nmuseum\thttp://a.example/1.jpg\n')).toEqual([{ line: 3, url: 'http://a.example/1.jpg', source: 'museum' }]);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-'));
    const file = path.join(dir, 'm.csv');
    fs.writeFileSync(file, 'sep=;\nurl;source\nhttp://a.example/1.jpg;museum\n');
    await expect(assertManifestShape(file)).resolves.toBeUndefined();
    // Its header still has to name the url column, and is the line the error names.
    fs.writeFileSync(file, 'sep=;\nimage;source\nhttp://a.example/1.jpg;museum\n');
    await expect(assertManifestShape(file)).rejects.toThrow(`manifest ${file} is CSV whose header (line 2) names no "url" column (its columns: image, source); its column "image" holds URLs: name it "url"`);
  });

  it('refuses a URL the parser would silently change (a tab, a line break)', async () => {
    // A tab-separated file read as a URL list: the URL parser drops the tab, and the URL would
    // have become https://x.example/1.pngmuseum.
    expect(await entries('m.txt', 'https://x.example/1.png\tmuseum\nhttps://x.example/2.png\t\n')).toEqual([
      { line: 1, error: 'URL contains a tab (a tab-separated file? write CSV with a "url" column, or NDJSON): "https://x.example/1.png\\tmuseum"' },
      { line: 2, url: 'https://x.example/2.png', source: 'x.example' },
    ]);
    expect(await entries('m.ndjson', '{"url":"https://x.example/a\\nb.png"}\n')).toEqual([
      { line: 1, error: 'URL contains a line break: "https://x.example/a\\nb.png"' },
    ]);
  });

  it('reads CSV separated by semicolons (Excel where the decimal mark is a comma), tabs or bars, as its header says', async () => {
    expect(await entries('m.csv', 'source;url\nmuseum;https://m.example/1.jpg\n;"https://m.example/a;b.jpg"\nmuseum;https://m.example/a;b.jpg\n')).toEqual([
      { line: 2, url: 'https://m.example/1.jpg', source: 'museum' },
      { line: 3, url: 'https://m.example/a;b.jpg', source: 'm.example' },
      { line: 4, error: '3 columns where the header has 2: a URL with a semicolon in it must be in double quotes' },
    ]);
    // Named .txt or .tsv, a header with a url column makes the file CSV all the same.
    expect(await entries('urls.tsv', 'url\tsource\nhttps://m.example/1.jpg\tmuseum\n')).toEqual([{ line: 2, url: 'https://m.example/1.jpg', source: 'museum' }]);
    expect(await entries('urls.txt', 'URL|Source\nhttps://m.example/1.jpg|museum\n')).toEqual([{ line: 2, url: 'https://m.example/1.jpg', source: 'museum' }]);
    // A comma header with a url column stays a comma CSV, whatever else its names hold.
    expect(await entries('m.csv', 'url,notes;misc\nhttps://m.example/1.jpg,a;b\n')).toEqual([{ line: 2, url: 'https://m.example/1.jpg', source: 'm.example' }]);
    expect(await entries('m.csv', 'link;source\nhttps://m.example/1.jpg;museum\n')).toEqual([{ line: 1, error: 'CSV header has no "url" column; nothing can be read from this file' }]);
  });

  it('drops the fragment, which is never sent: one image however many fragments it is listed with', async () => {
    expect(await entries('m.txt', 'https://x.example/1.png#main\nhttps://x.example/1.png?v=2#zoom\n')).toEqual([
      { line: 1, url: 'https://x.example/1.png', source: 'x.example' },
      { line: 2, url: 'https://x.example/1.png?v=2', source: 'x.example' },
    ]);
  });

  it('skips a URL too long for a workflow message, counted as sent (percent-encoded), and reads the rest', async () => {
    const at = (n: number) => `https://a.example/${'x'.repeat(n - 'https://a.example/'.length)}`;
    // Each non-ASCII character of the path is sent as 6 or 9 characters.
    const wide = `https://a.example/${'é'.repeat(600)}`;
    expect(await entries('m.txt', `${at(3_500)}\n${at(3_501)}\n${wide}\nhttps://a.example/2.jpg\n`)).toEqual([
      { line: 1, url: at(3_500), source: 'a.example' },
      { line: 2, error: 'URL of 3,501 characters (as sent, percent-encoded): at most 3,500, as a chunk of 500 travels in one workflow message of at most 2 MB' },
      { line: 3, error: expect.stringMatching(/^URL of 3,618 characters/) },
      { line: 4, url: 'https://a.example/2.jpg', source: 'a.example' },
    ]);
  });

  it('skips an over-long line and a JSON array with a reason, and reads the rest', async () => {
    const long = `{"url":"https://a.example/${'x'.repeat(70_000)}.jpg"}`;
    expect(await entries('m.ndjson', `{"url":"https://a.example/1.jpg"}\n${long}\n{"url":"https://a.example/2.jpg"}\n`)).toEqual([
      { line: 1, url: 'https://a.example/1.jpg', source: 'a.example' },
      { line: 2, error: `line is ${long.length} characters long, over the limit of 65536` },
      { line: 3, url: 'https://a.example/2.jpg', source: 'a.example' },
    ]);
    // A JSON array on one line, small or large, is a common mistake: say what to write instead.
    const array = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ url: `https://a.example/${i}.jpg` })));
    for (const n of [2, 5_000]) {
      expect(await entries('m.json', `${array(n)}\nhttps://a.example/ok.jpg\n`)).toEqual([
        { line: 1, error: expect.stringMatching(/a JSON array is not a manifest: write one JSON object per line \(NDJSON\)$/) },
        { line: 2, url: 'https://a.example/ok.jpg', source: 'a.example' },
      ]);
    }
  });

  it('reads a file that begins with a CSV header as CSV whatever its name, and a URL list as one', async () => {
    const csv = ['url,source', 'https://a.example/1.jpg,museum', '"https://a.example/2,3.jpg",'].join('\n');
    const want = [{ line: 2, url: 'https://a.example/1.jpg', source: 'museum' }, { line: 3, url: 'https://a.example/2,3.jpg', source: 'a.example' }];
    for (const name of ['urls.txt', 'export', 'urls.csv']) expect(await entries(name, csv)).toEqual(want);
    expect(await entries('urls.txt', '"URL"\nhttps://a.example/1.jpg\n')).toEqual([{ line: 2, url: 'https://a.example/1.jpg', source: 'a.example' }]);
    // Another separator is read as the header has it (as a URL list, each URL would carry ";museum").
    expect(await entries('urls.txt', 'url;source\nhttps://a.example/1.jpg;museum\n')).toEqual([{ line: 2, url: 'https://a.example/1.jpg', source: 'museum' }]);
    // A URL list, commas in its URLs included, is read as before.
    expect(await entries('urls.txt', '# list\nhttps://a.example/u,rl.jpg\n')).toEqual([{ line: 2, url: 'https://a.example/u,rl.jpg', source: 'a.example' }]);
  });

  it('reads a gzip manifest as its lines, whatever its name, and names compressions it does not read', async () => {
    const text = ['url,source', 'https://a.example/1.jpg,museum', 'not a url,museum', 'https://b.example/2.jpg,'].join('\n');
    const plain = await entries('m.csv', text);
    expect(plain).toHaveLength(3);
    // Two gzip members, as `cat a.gz b.gz` makes: both are read. The name's .gz is not needed.
    const gz = Buffer.concat([zlib.gzipSync(text.slice(0, 40)), zlib.gzipSync(text.slice(40))]);
    expect(await entries('m.csv.gz', gz)).toEqual(plain);
    expect(await entries('m.gz', gz)).toEqual(await entries('m', text));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-'));
    const zst = path.join(dir, 'm.ndjson.zst');
    fs.writeFileSync(zst, Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0]));
    expect(() => assertReadableManifest(zst)).toThrow(`manifest ${zst} is zstd-compressed: decompress it first, or compress it with gzip, which is read as it is`);
    // Cut short: the lines read before the damage are not the whole manifest, so it fails.
    await expect(entries('cut.gz', zlib.gzipSync(text).subarray(0, 30))).rejects.toThrow(/is damaged gzip: unexpected end of file/);
  });

  it('reads a UTF-16 manifest (PowerShell, Excel "Unicode Text") as its text, with or without a byte-order mark, gzip or not', async () => {
    const text = ['url,source', 'https://a.example/caf\u00e9.jpg,museum', 'https://b.example/\u{1F600}.jpg,'].join('\r\n');
    const utf8 = await entries('m.csv', text);
    expect(utf8.map((e) => ('url' in e ? e.url : e.error))).toEqual(['https://a.example/caf%C3%A9.jpg', 'https://b.example/%F0%9F%98%80.jpg']);
    const le = Buffer.from(text, 'utf16le');
    const be = Buffer.from(le).swap16();
    const bom = (b: Buffer, mark: number[]) => Buffer.concat([Buffer.from(mark), b]);
    for (const bytes of [bom(le, [0xff, 0xfe]), bom(be, [0xfe, 0xff]), le, be, zlib.gzipSync(bom(le, [0xff, 0xfe]))]) {
      expect(await entries('m.csv', bytes)).toEqual(utf8);
    }
    // Characters cut by the stream's 64 KiB reads (a surrogate pair among them) are put together.
    const many = Array.from({ length: 3000 }, (_, i) => `https://a.example/\u{1F600}\u00e9${i}.jpg`).join('\n');
    const fromUtf16 = await entries('big.txt', bom(Buffer.from(many, 'utf16le'), [0xff, 0xfe]));
    expect(fromUtf16).toEqual(await entries('big.txt', many));
    expect(fromUtf16.every((e) => 'url' in e)).toBe(true);
  });

  it('reads a manifest whose lines end in a carriage return alone (Excel for Mac\'s "CSV (Macintosh)") as its lines', async () => {
    const csv = ['url,source', 'https://a.example/1.jpg,museum', 'https://b.example/2.jpg,', '"https://a.example/3,4.jpg",museum'];
    const urls = ['https://a.example/1.jpg', 'https://b.example/2.jpg', 'https://a.example/3.jpg'];
    const ndjson = urls.map((url) => JSON.stringify({ url, source: 'museum' }));
    for (const [name, lines] of [['m.csv', csv], ['m.txt', urls], ['m.ndjson', ndjson]] as const) {
      const unix = await entries(name, `${lines.join('\n')}\n`);
      expect(unix.every((e) => 'url' in e)).toBe(true);
      expect(await entries(name, `${lines.join('\r')}\r`)).toEqual(unix);
      expect(await entries(name, lines.join('\r'))).toEqual(unix);
      // Windows line ends as before, and a file of both kinds.
      expect(await entries(name, `${lines.join('\r\n')}\r\n`)).toEqual(unix);
      expect(await entries(name, `${lines.slice(0, 2).join('\r')}\r\n${lines.slice(2).join('\n')}`)).toEqual(unix);
    }
  });

  it('refuses a line with bytes that are not UTF-8, which would crawl another URL, and reads the rest', async () => {
    const latin1 = Buffer.from('https://a.example/caf\xe9.jpg\nhttps://a.example/plain.jpg\nhttps://a.example/ok\u00e9.jpg\n'.replace('ok\u00e9', 'ok'), 'latin1');
    const got = await entries('m.txt', Buffer.concat([latin1, Buffer.from('https://a.example/caf\u00e9.jpg\n')]));
    expect(got).toEqual([
      { line: 1, error: expect.stringContaining('has bytes that are not UTF-8 (a Latin-1 or Windows-1252 file, say)') },
      { line: 2, url: 'https://a.example/plain.jpg', source: 'a.example' },
      { line: 3, url: 'https://a.example/ok.jpg', source: 'a.example' },
      { line: 4, url: 'https://a.example/caf%C3%A9.jpg', source: 'a.example' },
    ]);
    // A bad source name is as wrong as a bad URL; a bad header cell names no column we read.
    expect(await entries('m.csv', Buffer.from('url,l\xe9gende\nhttps://a.example/1.jpg,x\n"https://a.example/2.jpg",mus\xe9e\n', 'latin1'))).toEqual([
      { line: 2, url: 'https://a.example/1.jpg', source: 'a.example' },
      { line: 3, error: expect.stringContaining('not UTF-8') },
    ]);
  });

  it('says why a pipe, standard input or a directory cannot be a manifest', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-'));
    const fifo = path.join(dir, 'urls');
    execFileSync('mkfifo', [fifo]);
    const pipeHint = 'a manifest is read more than once, which a pipe cannot be: save it to a file; a gzip file is read as it is';
    expect(() => assertReadableManifest(fifo)).toThrow(`manifest ${fifo} is not a regular file (${pipeHint})`);
    expect(() => assertReadableManifest('-')).toThrow(`manifest - does not exist (standard input is not read: ${pipeHint})`);
    // Given by its URL: a file is read, not fetched.
    expect(() => assertReadableManifest('https://a.example/lists/urls.csv?v=2')).toThrow("manifest https://a.example/lists/urls.csv?v=2 does not exist (a manifest is a file: download it first, such as with `curl -fo urls.csv 'https://a.example/lists/urls.csv?v=2'`)");
    expect(() => assertReadableManifest(dir)).toThrow(`manifest ${dir} is a directory, not a file`);
  });

  it('refuses a binary file given as a manifest before reading it, instead of reporting thousands of bad lines', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-'));
    const write = (name: string, bytes: Buffer | string) => { const f = path.join(dir, name); fs.writeFileSync(f, bytes); return f; };
    const jpeg = write('photo.jpg', Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), Buffer.from('JFIF\0\nhttps://a.example/1.jpg\n')]));
    expect(() => assertReadableManifest(jpeg)).toThrow(`manifest ${jpeg} is not text (it is a JPEG image): a manifest lists URLs, as NDJSON, CSV or one URL a line`);
    const nul = write('m.txt', `${'https://a.example/1.jpg\n'.repeat(100)}\0`);
    expect(() => assertReadableManifest(nul)).toThrow('is not text (it has a NUL byte at offset 2400)');
    // Text, UTF-16 text and gzip pass.
    for (const ok of ['https://a.example/1.jpg\n', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('https://a.example/1.jpg\n', 'utf16le')]), zlib.gzipSync('https://a.example/1.jpg\n')]) {
      expect(() => assertReadableManifest(write('ok', ok))).not.toThrow();
    }
  });

  it('refuses a URL list whose every line has more after the URL (CSV without its header, columns separated by spaces)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-'));
    const write = (name: string, lines: string[]) => { const f = path.join(dir, name); fs.writeFileSync(f, `${lines.join('\n')}\n`); return f; };
    const rows = Array.from({ length: 30 }, (_, i) => `https://a.example/${i}.jpg,museum`);
    const headerless = write('urls.txt', ['# export', ...rows]);
    await expect(assertManifestShape(headerless)).rejects.toThrow(`manifest ${headerless} looks like CSV without its header line (line 2: "https://a.example/0.jpg,museum"): read as a list of URLs, each would be crawled with the "," and what follows it. Add a first line naming the columns (such as url,source)`);
    await expect(assertManifestShape(write('semi.txt', ['https://a.example/0.jpg;museum']))).rejects.toThrow('(such as url;source)');
    await expect(assertManifestShape(write('one.txt', ['https://a.example/0.JPG,']))).rejects.toThrow(/looks like CSV without its header line/);
    await expect(assertManifestShape(write('spaces', ['https://a.example/0.png museum', 'https://a.example/1.png  # the logo']))).rejects.toThrow(/has more than a URL on its lines \(line 1: "https:\/\/a.example\/0.png museum"\)/);
    // Read as before: with a header, with some plain URLs among them, commas in a path or a query.
    for (const ok of [write('h.txt', ['url,source', ...rows]), write('m.csv', ['url,source', ...rows]), write('some.txt', [...rows.slice(0, 3), 'https://a.example/x.jpg']),
      write('commas.txt', ['https://a.example/a,b.jpg', 'https://a.example/x.jpg?crop=1,2', 'https://img.example/w_1,h_2/x.jpg']), write('n.ndjson', ['{"url":"https://a.example/1.jpg"}'])]) {
      await expect(assertManifestShape(ok)).resolves.toBeUndefined();
    }
  });

  it('refuses NDJSON that names the source with another case of "source", which would be ignored', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-'));
    const write = (name: string, lines: string[]) => { const f = path.join(dir, name); fs.writeFileSync(f, `${lines.join('\n')}\n`); return f; };
    const f = write('m.ndjson', ['{"url":"https://a.example/1.jpg","source":"museum"}', 'not json', '{"url":"https://a.example/2.jpg","Source":"museum"}']);
    await expect(assertManifestShape(f)).rejects.toThrow(`manifest ${f} line 3 names its source with "Source": keys are case-sensitive, and its URLs would be crawled under their hosts' sources instead. Write "source"`);
    await expect(assertManifestShape(write('both.ndjson', ['{"url":"https://a.example/1.jpg","source":"m","SOURCE":"x"}', '{"url":"https://a.example/2.jpg"}']))).resolves.toBeUndefined();
  });

  it('refuses NDJSON whose first lines name no "url", naming the key that holds URLs', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-'));
    const write = (name: string, lines: string[]) => { const f = path.join(dir, name); fs.writeFileSync(f, `${lines.join('\n')}\n`); return f; };
    const upper = write('u.ndjson', ['{"URL":"https://a.example/1.jpg"}', '{"URL":"https://a.example/2.jpg"}']);
    await expect(assertManifestShape(upper)).rejects.toThrow(`manifest ${upper} is NDJSON whose lines name no "url" (line 1 has "URL"); its key "URL" holds URLs: name it "url" (keys are case-sensitive)`);
    await expect(assertManifestShape(write('n.ndjson', ['{"id":1}', 'not json']))).rejects.toThrow('whose lines name no "url" (line 1 has "id"): give each line its image URL as "url"');
    // One line with a url among them: the others are bad lines, told as each is read.
    await expect(assertManifestShape(write('some.ndjson', ['{"id":1}', '{"url":"https://a.example/2.jpg"}']))).resolves.toBeUndefined();
  });

  it('refuses JSON written over several lines (jq ., indent=2), giving the jq command that writes NDJSON', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-'));
    const write = (name: string, text: string) => { const f = path.join(dir, name); fs.writeFileSync(f, text); return f; };
    const items = [{ url: 'https://a.example/1.jpg', source: 'museum' }, { url: 'https://a.example/2.jpg' }];
    const array = write('urls.json', `${JSON.stringify(items, null, 2)}\n`);
    await expect(assertManifestShape(array)).rejects.toThrow(`manifest ${array} holds a JSON array written over several lines (line 1 is "[" alone), which is not read as a manifest: ` +
      `write one JSON object per line (NDJSON), such as with \`jq -c '.[]' ${array} > ${path.join(dir, 'urls.ndjson')}\``);
    // Never `> FILE` into the file read: the shell empties it first.
    const objects = write('urls.ndjson', `# from jq .\n${items.map((i) => JSON.stringify(i, null, 2)).join('\n')}\n`);
    await expect(assertManifestShape(objects)).rejects.toThrow(`(line 2 is "{" alone), which is not read as a manifest: write one JSON object per line (NDJSON), such as with \`jq -c . ${objects} > ${path.join(dir, 'urls.lines.ndjson')}\``);
    await expect(assertManifestShape(write('one.ndjson', `${items.map((i) => JSON.stringify(i)).join('\n')}\n`))).resolves.toBeUndefined();
  });

  it('refuses a .csv file whose header names no url column, naming the column that holds URLs', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-'));
    const write = (name: string, text: string) => { const f = path.join(dir, name); fs.writeFileSync(f, text); return f; };
    const f = write('m.csv', 'id,image_url,source\n1,https://a.example/1.jpg,museum\n');
    await expect(assertManifestShape(f)).rejects.toThrow(`manifest ${f} is CSV whose header (line 1) names no "url" column (its columns: id, image_url, source); its column "image_url" holds URLs: name it "url"`);
    await expect(assertManifestShape(write('h.csv', 'id;link;source\n'))).rejects.toThrow('names no "url" column (its columns: id, link, source): name the column of image URLs "url"');
    await expect(assertManifestShape(write('ok.csv', 'id,URL,source\n1,https://a.example/1.jpg,museum\n'))).resolves.toBeUndefined();
    const list = write('list.csv', 'https://a.example/1.jpg\nhttps://a.example/2.jpg\n');
    await expect(assertManifestShape(list)).rejects.toThrow(`manifest ${list} is named .csv but has no header line (line 1 is a URL: "https://a.example/1.jpg"): add a first line naming the columns (such as url,source), or name the file .txt for a list of URLs`);
  });

  it('reads a 200,000-line manifest line by line', async () => {
    const lines = Array.from({ length: 200_000 }, (_, i) => `https://s${i % 7}.example/${i}.jpg`).join('\n');
    let n = 0;
    for (const e of await entries('big.txt', lines)) if ('url' in e) n++;
    expect(n).toBe(200_000);
  });

  it('validates the source catalogue with clear messages', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'catalog-'));
    const good = path.join(dir, 'c.json');
    fs.writeFileSync(good, JSON.stringify([{ name: 'museum', imageCount: 4000, rate: 2, burst: 1 }]));
    expect((await readCatalog(good)).get('museum')).toEqual({ imageCount: 4000, rate: 2, burst: 1 });
    const bad = path.join(dir, 'bad.json');
    fs.writeFileSync(bad, JSON.stringify([{ name: 'museum', rate: 0 }]));
    await expect(readCatalog(bad)).rejects.toThrow(/entry 1 \(museum\): rate must be greater than 0/);
    for (const [entry, hint] of [['{"Name":"museum"}', ' (this entry has "Name": keys are case-sensitive)'], ['{"source":"museum","rate":2}', ' (this entry has "source": a catalogue entry names its source with "name")'], ['{"rate":2}', '']]) {
      fs.writeFileSync(bad, `[${entry}]`);
      await expect(readCatalog(bad)).rejects.toThrow(`catalog ${bad} entry 1: "name" is required${hint}`);
    }
    await expect(readCatalog(path.join(dir, 'missing.json'))).rejects.toThrow(`catalog ${path.join(dir, 'missing.json')} does not exist`);
    await expect(readCatalog(dir)).rejects.toThrow(`catalog ${dir} is a directory, not a file`);
    // Empty (an export that failed): crawled at the default rate, with a warning that says so.
    for (const text of ['', '[]', '{}', '\n\n']) {
      const empty = path.join(dir, 'empty.json');
      fs.writeFileSync(empty, text);
      const warnings: string[] = [];
      expect((await readCatalog(empty, (m) => warnings.push(m))).size).toBe(0);
      expect(warnings).toEqual([`catalog ${empty} lists no sources, so it sets no source's rate (a source started without an entry is crawled at 1 request/s)`]);
    }
    const warnings: string[] = [];
    await readCatalog(good, (m) => warnings.push(m));
    expect(warnings).toEqual([]);
    const twice = path.join(dir, 'twice.ndjson');
    fs.writeFileSync(twice, '{"name":"museum","rate":2}\n{"name":"other"}\n{"name":"museum","rate":20}\n');
    // An NDJSON (or CSV) catalogue's entries are named by their lines.
    await expect(readCatalog(twice)).rejects.toThrow(/line 3: "museum" is listed twice/);
    // One host named two ways: which entry should win is anyone's guess.
    const twoNames = path.join(dir, 'two-names.ndjson');
    fs.writeFileSync(twoNames, '{"name":"xn--bcher-kva.example","rate":2}\n{"name":"Bücher.Example","rate":20}\n');
    await expect(readCatalog(twoNames)).rejects.toThrow('catalog ' + twoNames + ': "Bücher.Example" and "xn--bcher-kva.example" name one host (xn--bcher-kva.example): keep one');
    const misspelt = path.join(dir, 'misspelt.json');
    fs.writeFileSync(misspelt, JSON.stringify({ museum: { Rate: 5 } }));
    await expect(readCatalog(misspelt)).rejects.toThrow('entry 1 (museum): unknown field "Rate" (the fields are name, imageCount, rate, burst, maxConnections)');
    // What a site's owner asked for: at most so many requests open at once.
    const asked = path.join(dir, 'asked.json');
    fs.writeFileSync(asked, JSON.stringify([{ name: 'museum', rate: 5, maxConnections: 2 }]));
    expect((await readCatalog(asked)).get('museum')).toEqual({ rate: 5, maxConnections: 2 });
    for (const n of [0, 2.5, '2', 5000]) {
      fs.writeFileSync(asked, JSON.stringify([{ name: 'museum', maxConnections: n }]));
      await expect(readCatalog(asked)).rejects.toThrow('entry 1 (museum): maxConnections must be a whole number of requests open at once from 1 to 4096');
    }
  });

  it('reads a CSV catalogue with a header naming its columns, in any case, as a spreadsheet keeps them', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'catalog-'));
    const write = (name: string, text: string) => { const f = path.join(dir, name); fs.writeFileSync(f, text); return f; };
    const csv = await readCatalog(write('c.csv', 'Name,Rate,Burst,maxconnections,imageCount\r\nmuseum,2.5,,2,\n\nphotos,,1,,4000000\n'));
    expect([...csv]).toEqual([['museum', { rate: 2.5, maxConnections: 2 }], ['photos', { burst: 1, imageCount: 4000000 }]]);
    expect([...await readCatalog(write('semi.txt', 'name;rate\n"a.example";3\n'))]).toEqual([['a.example', { rate: 3 }]]);
    const bad = (text: string) => readCatalog(write('bad.csv', text));
    await expect(bad('name,rate\n\nmuseum,fast\n')).rejects.toThrow(/^catalog .*bad\.csv line 3 \(museum\): rate must be a finite number/);
    await expect(bad('name,rps\nmuseum,2\n')).rejects.toThrow('line 2 (museum): unknown field "rps"');
    await expect(bad('name,rate\nmuseum,2,9\n')).rejects.toThrow(/bad\.csv line 2: 3 cells where the header has 2$/);
    // Excel's sep= line before the header, its lines counted.
    expect([...await readCatalog(write('excel.csv', 'sep=;\r\nname;rate\r\nmuseum;2\r\n'))]).toEqual([['museum', { rate: 2 }]]);
    await expect(bad('sep=;\nname;rate\nmuseum;fast\n')).rejects.toThrow(/bad\.csv line 3 \(museum\): rate must be a finite number/);
  });

  it('reads a one-line NDJSON catalogue as one entry, and an object keyed by name as sources', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'catalog-'));
    const write = (name: string, text: string) => { const f = path.join(dir, name); fs.writeFileSync(f, text); return f; };
    const one = await readCatalog(write('one.ndjson', '{"name":"museum","rate":2}\n'));
    expect([...one]).toEqual([['museum', { rate: 2 }]]);
    const keyed = await readCatalog(write('keyed.json', JSON.stringify({ museum: { rate: 2 }, name: { burst: 3 } }, null, 2)));
    expect(keyed.get('museum')).toEqual({ rate: 2 });
    expect(keyed.get('name')).toEqual({ burst: 3 });
    // A keyed value that is not an object would have set nothing for its source.
    await expect(readCatalog(write('number.json', '{"museum": 2}'))).rejects.toThrow('source "museum" must be an object such as {"rate": 2} (got 2)');
  });

  it('reads a catalogue with carriage-return line ends, and names the NDJSON line that is not JSON', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'catalog-'));
    const write = (name: string, text: string) => { const f = path.join(dir, name); fs.writeFileSync(f, text); return f; };
    const lines = ['{"name":"museum","rate":2}', '', '{"name":"photos","burst":3}'];
    for (const eol of ['\n', '\r\n', '\r']) {
      expect([...await readCatalog(write('c.ndjson', lines.join(eol)))]).toEqual([['museum', { rate: 2 }], ['photos', { burst: 3 }]]);
    }
    const f = write('bad.ndjson', [...lines, '{"name":"broken",rate:5}'].join('\r'));
    await expect(readCatalog(f)).rejects.toThrow(`catalog ${f} line 4 is not valid JSON (`);
    await expect(readCatalog(f)).rejects.toThrow(/: a catalogue is a JSON array, or one JSON object a line, of \{"name", "imageCount"\?, "rate"\?, "burst"\?, "maxConnections"\?\}, or CSV with a header naming those columns$/);
  });

  it('names every bad catalogue entry at once, not only the first', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'catalog-'));
    const write = (name: string, text: string) => { const f = path.join(dir, name); fs.writeFileSync(f, text); return f; };
    const ndjson = write('bad.ndjson', [
      '{"name":"a.example","rate":0}', '{"name":"b.example","rate":2}', 'garbage', '{"name":"c.example","burst":10000}', '{"name":"b.example","rate":3}', '{"nam":"d.example"}',
    ].join('\n'));
    const err = await readCatalog(ndjson).then(() => undefined, (e: Error) => e.message);
    // Before: only `line 1 (a.example): rate must be greater than 0`, then the next one a run later.
    expect(err).toBe(`catalog ${ndjson} has 5 bad entries (fix them all; a catalogue is a JSON array, or one JSON object a line, of {"name", "imageCount"?, "rate"?, "burst"?, "maxConnections"?}, or CSV with a header naming those columns):\n` +
      '  line 1 (a.example): rate must be greater than 0 requests per second\n' +
      `  line 3 is not valid JSON (Unexpected token 'g', "garbage" is not valid JSON)\n` +
      '  line 4 (c.example): burst must be a whole number from 0 to 1000\n' +
      '  line 5: "b.example" is listed twice\n' +
      '  line 6: "name" is required');
    const csv = write('bad.csv', `name,rate\n${Array.from({ length: 25 }, (_, i) => `s${i}.example,fast`).join('\n')}\nok.example,2,9\n`);
    const csvErr = await readCatalog(csv).then(() => undefined, (e: Error) => e.message);
    expect(csvErr).toMatch(new RegExp(`^catalog ${csv.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} has 26 bad entries \\(fix them all\\):\n  line 2 \\(s0\\.example\\): rate must be a finite number`));
    expect(csvErr!.split('\n')).toHaveLength(1 + 20 + 1);
    expect(csvErr).toMatch(/\n {2}and 6 more$/);
  });

  it('reads a UTF-16 catalogue (Windows PowerShell writes one) as its text', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'catalog-'));
    const f = path.join(dir, 'sources.json');
    fs.writeFileSync(f, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('[{"name":"museum","rate":2}]\r\n', 'utf16le')]));
    expect([...(await readCatalog(f))]).toEqual([['museum', { rate: 2 }]]);
  });
});
