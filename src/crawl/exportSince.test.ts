import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CURSOR_OVERLAP_MS, parseSince, readCursor, RecentFiles, writeCursor } from './exportSince';

describe('where an export --since starts', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');

  it('reads a time, UTC unless it gives an offset, or a span ago', () => {
    expect(parseSince('2026-12-01', now)).toBe(Date.parse('2026-12-01T00:00:00Z'));
    expect(parseSince('2026-12-01T09:30', now)).toBe(Date.parse('2026-12-01T09:30:00Z'));
    expect(parseSince('2026-12-01 09:30:15.250', now)).toBe(Date.parse('2026-12-01T09:30:15.250Z'));
    expect(parseSince('2026-12-01T09:30:00+01:00', now)).toBe(Date.parse('2026-12-01T08:30:00Z'));
    expect(parseSince('45m', now)).toBe(now - 45 * 60_000);
    expect(parseSince('1.5h', now)).toBe(now - 90 * 60_000);
    expect(parseSince(' 7D ', now)).toBe(now - 7 * 86_400_000);
    for (const bad of ['yesterday', '12/01/2026', '2026-13-45', '5 weeks', '']) expect(() => parseSince(bad, now)).toThrow(/give a time .* or a span ago/);
  });

  it('starts the next export before the newest file seen, never before where this one started, naming the files it gave from there', () => {
    const recent = new RecentFiles();
    expect(recent.next(undefined)).toBeUndefined();
    expect(recent.next(now - 5)).toEqual({ since: now - 5 });
    recent.add('records/a/old.ndjson', now - 3_600_000);
    recent.add('records/a/late.ndjson', now - CURSOR_OVERLAP_MS + 1);
    recent.add('records/b/newest.ndjson', now);
    recent.add('records/a/listed-after.ndjson', now - 10 * 60_000);
    expect(recent.next(undefined)).toEqual({
      since: now - CURSOR_OVERLAP_MS,
      given: new Map([['records/a/late.ndjson', now - CURSOR_OVERLAP_MS + 1], ['records/b/newest.ndjson', now]]),
    });
    expect(recent.next(now - 1)).toEqual({ since: now - 1, given: new Map([['records/b/newest.ndjson', now]]) });
  });

  it('keeps only the newest files however many are listed', () => {
    const recent = new RecentFiles();
    for (let i = 0; i < 200_000; i++) recent.add(`records/s/${i}.ndjson`, now + i * 10);
    const next = recent.next(undefined)!;
    expect(next.since).toBe(now + 1_999_990 - CURSOR_OVERLAP_MS);
    expect(next.given!.size).toBe(CURSOR_OVERLAP_MS / 10 + 1);
  });

  it('reads a cursor as it writes it, or a time alone, and says what to do with one it cannot read', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cursor-'));
    try {
      const file = path.join(dir, 'cursor.json');
      expect(readCursor(file)).toBeUndefined();
      const cursor = { since: now - 1000, given: new Map([['records/s/b1-g1.ndjson', now - 500], ['records/s/a0-g2.ndjson', now]]) };
      await writeCursor(file, cursor);
      expect(readCursor(file)).toEqual(cursor);
      fs.writeFileSync(file, '2026-12-01T11:00:00Z\n');
      expect(readCursor(file)).toEqual({ since: Date.parse('2026-12-01T11:00:00Z') });
      for (const bad of ['garbage', '{"since": 5}', '{"since": "2026-12-01T11:00', '']) {
        fs.writeFileSync(file, bad);
        expect(() => readCursor(file)).toThrow(`the cursor ${file} holds no time`);
      }
      // A cursor that could not be moved on is found before the export, not after it.
      expect(() => readCursor(path.join(dir, 'no-dir', 'cursor.json'))).toThrow(`cannot write ${path.join(dir, 'no-dir', 'cursor.json')}: the directory ${path.join(dir, 'no-dir')} does not exist`);
      expect(() => readCursor(dir)).toThrow(`cannot write ${dir}: it is a directory`);
      expect(fs.readdirSync(dir)).toEqual(['cursor.json']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
