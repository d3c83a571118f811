import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readManifest, scanCsv } from './manifest';
import { RECORD_COLUMNS, RecordsCsv } from './recordsCsv';

const done = {
  url: 'https://museum.example/a.jpg', source: 'museum', outcome: 'done', reason: null, status: 200, ttfbMs: 12, totalMs: 30,
  attempts: 1, recordedAt: '2026-12-01T05:16:28.542Z', format: 'jpeg', width: 320, height: 240, bytes: 1302,
  sha256: 'ec4a', jpegQuality: 60, orientation: 6, artist: 'Zoë "Z" Smith', copyright: 'CC BY 4.0, Zoë Smith',
  licenseUrl: 'https://creativecommons.org/licenses/by/4.0/', xRobotsTag: ['noai', 'noimageai'], tdmReservation: true,
  tdmPolicy: null, thumbnailKey: 'thumbnails/15/15a7.jpg', originalKey: null, finalUrl: 'https://museum.example/a.jpg', redirects: 0,
};

/** The cells of each row, read back as a spreadsheet reads them (a quoted cell may hold line breaks). */
function cellsOf(csv: string): string[][] {
  const rows: string[][] = [];
  let pending = '';
  for (const line of csv.split('\r\n').slice(0, -1)) {
    pending = pending ? `${pending}\r\n${line}` : line;
    const { cells, open } = scanCsv(pending);
    if (open) continue;
    rows.push(cells);
    pending = '';
  }
  return rows;
}

describe('metadata records as CSV', () => {
  it('writes a header and one row per record, every documented field in its column', () => {
    const csv = new RecordsCsv();
    const text = csv.header() + csv.rows(`${JSON.stringify(done)}\n`);
    const [header, row] = cellsOf(text);
    expect(header).toEqual([...RECORD_COLUMNS, 'other']);
    const cell = (c: string) => row![header!.indexOf(c)];
    expect(cell('url')).toBe('https://museum.example/a.jpg');
    expect(cell('reason')).toBe('');
    expect(cell('width')).toBe('320');
    expect(cell('artist')).toBe('Zoë "Z" Smith');
    expect(cell('copyright')).toBe('CC BY 4.0, Zoë Smith');
    expect(cell('xRobotsTag')).toBe('noai, noimageai');
    expect(cell('tdmReservation')).toBe('true');
    expect(cell('originalKey')).toBe('');
    expect(cell('finalUrl')).toBe('https://museum.example/a.jpg');
    expect(cell('other')).toBe('');
    expect(text).toContain('"Zoë ""Z"" Smith"');
    expect(csv.written).toBe(1);
  });

  it('keeps a field no column names in `other`, as JSON, and counts lines that are no record', () => {
    const csv = new RecordsCsv();
    const rows = csv.rows([
      JSON.stringify({ url: 'https://m/1.jpg', source: 'm', outcome: 'robots', spooled: true, hint: { a: 1 } }),
      '',
      '{"url": "https://m/2.jpg", "source": "m", "outc', // a line cut short
      '[1,2]',
      JSON.stringify({ url: 'https://m/3.jpg', source: 'm', outcome: 'linkrot', status: 404 }),
    ].join('\n'));
    const [first, second] = cellsOf(rows);
    expect(JSON.parse(first!.at(-1)!)).toEqual({ spooled: true, hint: { a: 1 } });
    expect(second![RECORD_COLUMNS.indexOf('status')]).toBe('404');
    expect(csv.written).toBe(2);
    expect(csv.notRecords).toBe(2);
  });

  it('marks text a spreadsheet would run as a formula, whatever the site wrote into the EXIF', () => {
    const csv = new RecordsCsv();
    const rows = csv.rows(JSON.stringify({ url: 'https://m/1.jpg', source: 'm', outcome: 'done', artist: '=HYPERLINK("https://evil.example","click")', copyright: '+1 555', reason: '@SUM(A1)', status: -1 }));
    const [row] = cellsOf(rows);
    expect(row![RECORD_COLUMNS.indexOf('artist')]).toBe('\'=HYPERLINK("https://evil.example","click")');
    expect(row![RECORD_COLUMNS.indexOf('copyright')]).toBe('\'+1 555');
    expect(row![RECORD_COLUMNS.indexOf('reason')]).toBe('\'@SUM(A1)');
    // A number is a number, not a formula.
    expect(row![RECORD_COLUMNS.indexOf('status')]).toBe('-1');
  });

  it('is a manifest itself: its url and source columns crawl the same URLs again, a line break in a cell and all', async () => {
    const csv = new RecordsCsv();
    const records = [
      { ...done, artist: 'Line one\nline two', url: 'https://museum.example/a.jpg' },
      { url: 'https://photos.example/b%20c.jpg', source: 'photos', outcome: 'linkrot', reason: 'http 404', status: 404 },
    ];
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'records-csv-'));
    try {
      const file = path.join(dir, 'linkrot.csv');
      fs.writeFileSync(file, csv.header() + csv.rows(records.map((r) => JSON.stringify(r)).join('\n')));
      const entries = [];
      for await (const e of readManifest(file)) entries.push(e);
      expect(entries.map((e) => ('url' in e ? `${e.source} ${e.url}` : e.error))).toEqual([
        'museum https://museum.example/a.jpg', 'photos https://photos.example/b%20c.jpg',
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
