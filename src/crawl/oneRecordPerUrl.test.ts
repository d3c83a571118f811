import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { OneRecordPerUrl } from './oneRecordPerUrl';

const rec = (url: string, outcome: string, recordedAt: string, extra: Record<string, unknown> = {}) =>
  `${JSON.stringify({ url, source: 's', outcome, reason: outcome === 'done' ? null : 'x', recordedAt, ...extra })}\n`;

const add = (held: OneRecordPerUrl, text: string) => held.add(Buffer.from(text));

function kept(held: OneRecordPerUrl): { url: string; outcome: string; recordedAt: string }[] {
  return [...held.texts()].join('').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

describe('one record per URL of a source', () => {
  let dir: string;
  beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'one-record-')); });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('gives the texts back as they came when no URL has two records', () => {
    const held = new OneRecordPerUrl(dir);
    const texts = [rec('https://a/1.jpg', 'done', '2026-01-01T00:00:00.000Z') + rec('https://a/2.jpg', 'linkrot', '2026-01-01T00:00:01.000Z'), rec('https://a/3.jpg', 'content', '2026-01-01T00:00:02.000Z')];
    for (const t of texts) add(held, t);
    expect([...held.texts()]).toEqual(texts);
    expect(held.superseded).toBe(0);
  });

  it('keeps the latest record of a URL asked again, and its done record over any later failure', () => {
    const held = new OneRecordPerUrl(dir);
    // The second manifest's chunk sorts first: order in the store says nothing of time.
    add(held, rec('https://a/1.jpg', 'done', '2026-01-02T00:00:00.000Z') + rec('https://a/2.jpg', 'done', '2026-01-02T00:00:01.000Z') + rec('https://a/3.jpg', 'content', '2026-01-02T00:00:02.000Z'));
    add(held, rec('https://a/1.jpg', 'content', '2026-01-01T00:00:00.000Z') + rec('https://a/2.jpg', 'error', '2026-01-03T00:00:00.000Z') + rec('https://a/3.jpg', 'error', '2026-01-01T00:00:00.000Z') + rec('https://a/4.jpg', 'done', '2026-01-01T00:00:00.000Z'));
    expect(kept(held).map((r) => `${r.url} ${r.outcome}`).sort()).toEqual(['https://a/1.jpg done', 'https://a/2.jpg done', 'https://a/3.jpg content', 'https://a/4.jpg done']);
    expect(held.superseded).toBe(3);
  });

  it('keeps the record read last when the times are equal, and passes lines that are not records', () => {
    const held = new OneRecordPerUrl(dir);
    add(held, `${rec('https://a/1.jpg', 'content', 'T', { n: 1 })}not json\n`);
    add(held, `${rec('https://a/1.jpg', 'content', 'T', { n: 2 })}{"other":1}\n`);
    const text = [...held.texts()].join('');
    expect(text).toContain('not json\n');
    expect(text).toContain('{"other":1}\n');
    expect(text).not.toContain('"n":1');
    expect(text).toContain('"n":2');
  });

  it('finds a URL written with escapes by parsing its line', () => {
    const held = new OneRecordPerUrl(dir);
    add(held, `{"url":"https://a/\\u00e9.jpg","outcome":"content","recordedAt":"1"}\n`);
    add(held, `{"url":"https://a/\\u00e9.jpg","outcome":"done","recordedAt":"0"}\n`);
    expect(kept(held).map((r) => r.outcome)).toEqual(['done']);
  });

  it('holds a large source in a temporary file, with the same result, and removes the file', () => {
    const held = new OneRecordPerUrl(dir, 1_000);
    const all: string[] = [];
    for (let f = 0; f < 20; f++) {
      const t = Array.from({ length: 10 }, (_, i) => rec(`https://a/${(f * 10 + i) % 150}.jpg`, f >= 15 ? 'done' : 'content', `2026-01-01T00:00:${String(f).padStart(2, '0')}.000Z`)).join('');
      all.push(t);
      add(held, t);
    }
    expect(fs.readdirSync(dir)).toHaveLength(1);
    const out = kept(held);
    expect(out).toHaveLength(150);
    expect(new Set(out.map((r) => r.url)).size).toBe(150);
    // URLs 0-49 were asked again in files 15-19 and answered then.
    expect(out.filter((r) => r.outcome === 'done').map((r) => r.url).sort()).toEqual(Array.from({ length: 50 }, (_, i) => `https://a/${i}.jpg`).sort());
    expect(held.superseded).toBe(50);
    held.close();
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});
