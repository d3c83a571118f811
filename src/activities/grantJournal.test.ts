import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GrantJournal } from './grantJournal';
import { log } from '../shared/log';

describe('GrantJournal', () => {
  let dir: string;
  beforeEach(() => { dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'journal-')), 'journal'); });

  it('gives a retry what the attempts before it wrote, in order, without a line a kill cut short', () => {
    const first = new GrantJournal(dir).open('k', false);
    expect(first.earlier).toEqual([]);
    first.writer.add({ i: 0 });
    first.writer.add({ i: 2 });
    const [file] = fs.readdirSync(dir);
    fs.appendFileSync(path.join(dir, file!), '{"i": 3, "outcome": {"ur');
    const second = new GrantJournal(dir).open('k', true);
    expect(second.earlier).toEqual([{ i: 0 }, { i: 2 }]);
    // The retry's lines follow the cut one, not continue it: a third attempt reads both attempts' lines.
    second.writer.add({ i: 1 });
    expect(new GrantJournal(dir).open('k', true).earlier).toEqual([{ i: 0 }, { i: 2 }, { i: 1 }]);
    expect(new GrantJournal(dir).open('other', true).earlier).toEqual([]);
  });

  it('starts a first attempt afresh: a file an earlier crawl left under the same key is not read by its retry', () => {
    const stale = new GrantJournal(dir).open('k', false);
    stale.writer.add({ i: 0, stale: true });
    const journal = new GrantJournal(dir);
    const first = journal.open('k', false);
    first.writer.add({ i: 1 });
    expect(journal.open('k', true).earlier).toEqual([{ i: 1 }]);
  });

  it('discards the file once the grant is recorded, the lines of attempts before a retry too', () => {
    const journal = new GrantJournal(dir);
    const a = journal.open('k', false);
    a.writer.add({ i: 0 });
    expect(fs.readdirSync(dir)).toHaveLength(1);
    const b = journal.open('k', true);
    expect(b.earlier).toHaveLength(1);
    const other = journal.open('other', false);
    other.writer.add({ i: 5 });
    // Nothing written by the retry itself: the file it read goes all the same; the directory
    // stays while another grant's journal is in it, and goes with the last.
    b.writer.discard();
    expect(fs.readdirSync(dir)).toHaveLength(1);
    other.writer.discard();
    expect(fs.existsSync(dir)).toBe(false);
    // A grant after that makes it again.
    const later = journal.open('later', false);
    later.writer.add({ i: 6 });
    expect(journal.open('later', true).earlier).toEqual([{ i: 6 }]);
  });

  it('drops journals older than its limit at its first use, and leaves recent ones', async () => {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'old.ndjson'), '{}\n');
    fs.writeFileSync(path.join(dir, 'new.ndjson'), '{}\n');
    fs.writeFileSync(path.join(dir, 'other.txt'), 'x');
    const dayAgo = new Date(Date.now() - 25 * 3600_000);
    fs.utimesSync(path.join(dir, 'old.ndjson'), dayAgo, dayAgo);
    new GrantJournal(dir).open('k', false);
    for (let i = 0; i < 50 && fs.existsSync(path.join(dir, 'old.ndjson')); i++) await new Promise((r) => setTimeout(r, 20));
    expect(fs.readdirSync(dir).sort()).toEqual(['new.ndjson', 'other.txt']);
  });

  it('costs nothing but the journal when its directory cannot be written, and says so once, not for every grant', () => {
    fs.mkdirSync(path.dirname(dir), { recursive: true });
    fs.writeFileSync(dir, 'a file where the directory would be');
    const warn = jest.spyOn(log, 'warn').mockImplementation(() => undefined);
    try {
      const journal = new GrantJournal(dir);
      for (const key of ['a', 'b', 'c']) {
        const { writer } = journal.open(key, false);
        expect(() => { writer.add({ i: 0 }); writer.add({ i: 1 }); writer.discard(); }).not.toThrow();
      }
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0]![0]).toMatchObject({ event: 'journal-unwritable' });
    } finally {
      warn.mockRestore();
    }
  });
});
