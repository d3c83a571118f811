import { StartProgressLine } from './startProgress';

function sink(isTTY: boolean): { out: { write(t: string): void; isTTY: boolean }; text: string[] } {
  const text: string[] = [];
  return { out: { write: (t: string) => { text.push(t); }, isTTY }, text };
}

describe('a start\'s progress before the crawl\'s own', () => {
  it('rewrites one terminal line at most 4 times a second from 1 s on, and clears it at the end', () => {
    let now = 0;
    const { out, text } = sink(true);
    const line = new StartProgressLine(out, 'm.ndjson', () => now);
    line.update({ linesRead: 1, sourcesStarted: 0, sources: null }); // a start this quick shows nothing
    now = 1_000;
    line.update({ linesRead: 50_000, sourcesStarted: 0, sources: null });
    now = 1_200;
    line.update({ linesRead: 100_000, sourcesStarted: 0, sources: null });
    now = 1_250;
    line.update({ linesRead: 1_234_567, sourcesStarted: 1_200, sources: 3_000 });
    line.done();
    line.done();
    expect(text).toEqual(['\r\x1b[Kreading m.ndjson: 50,000 lines', '\r\x1b[Kstarting monitors: 1,200 of 3,000 sources', '\r\x1b[K']);
  });

  it('fits the terminal\'s width: a long manifest path shortened to its name, then the line cut', () => {
    let now = 1_000;
    const text: string[] = [];
    const out = { write: (t: string) => { text.push(t); }, isTTY: true, columns: 60 };
    const line = new StartProgressLine(out, '/data/exports/2026-11/museum-images.ndjson.gz', () => now);
    now = 2_000;
    line.update({ linesRead: 1_250_000, sourcesStarted: 0, sources: null });
    out.columns = 30;
    now = 3_000;
    line.update({ linesRead: 1_250_000, sourcesStarted: 0, sources: null });
    out.columns = 10;
    now = 4_000;
    line.update({ linesRead: 1_250_000, sourcesStarted: 0, sources: null });
    expect(text).toEqual(['\r\x1b[Kreading museum-images.ndjson.gz: 1,250,000 lines', '\r\x1b[Kreading ….gz: 1,250,000 lines', '\r\x1b[Kreading …']);
  });

  it('writes a start_progress JSON line every 5 s to a log (from 1 s on), and nothing to clear', () => {
    let now = Date.parse('2026-11-27T07:59:59.000Z');
    const { out, text } = sink(false);
    const line = new StartProgressLine(out, 'm.ndjson', () => now);
    line.update({ linesRead: 10, sourcesStarted: 0, sources: 3 });
    now += 1_000;
    line.update({ linesRead: 10, sourcesStarted: 1, sources: 3 });
    now += 4_999;
    line.update({ linesRead: 10, sourcesStarted: 2, sources: 3 });
    now += 1;
    line.update({ linesRead: 10, sourcesStarted: 3, sources: 3 });
    line.done();
    expect(text.map((t) => JSON.parse(t) as unknown)).toEqual([
      { event: 'start_progress', time: '2026-11-27T08:00:00.000Z', linesRead: 10, sourcesStarted: 1, sources: 3 },
      { event: 'start_progress', time: '2026-11-27T08:00:05.000Z', linesRead: 10, sourcesStarted: 3, sources: 3 },
    ]);
  });
});
