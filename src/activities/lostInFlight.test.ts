import { closedLine, lostInFlight, lostOutcome, openLine } from './lostInFlight';

const none = new Set<number>();
const finishedEntry = (i: number) => ({ i, outcome: { url: `u${i}`, cls: 'done' }, extra: {} });

describe('lostInFlight', () => {
  it('finds the runs a dead attempt left open in its journal, and none that ended or finished', () => {
    const journal = [openLine(0), finishedEntry(0), openLine(1), closedLine(1), openLine(2), openLine(3), openLine(1)];
    expect(lostInFlight(journal, undefined, none, 4)).toEqual([1, 2, 3]);
  });

  it('takes a run a retry on another machine last heard of as open, unless the journal here saw it end', () => {
    expect(lostInFlight([], [2, 0], none, 3)).toEqual([0, 2]);
    expect(lostInFlight([openLine(2), closedLine(2)], [2], none, 3)).toEqual([]);
    expect(lostInFlight([openLine(2), finishedEntry(2)], [2], none, 3)).toEqual([]);
  });

  it('leaves out what this attempt knows finished (a stored record) and indices outside the grant or not indices', () => {
    const journal = [openLine(0), openLine(1), { open: -1 }, { open: 1.5 }, { open: '2' }, null, 'x', openLine(9)];
    expect(lostInFlight(journal, [5, 'y', -3], new Set([0]), 6)).toEqual([1, 5]);
  });
});

describe('lostOutcome', () => {
  it('uses the try the URL was on: tried again below the limit, ended as an error at it, never a sample of the site', () => {
    const first = lostOutcome({ url: 'http://a/x.jpg', attempt: 1 }, 3);
    expect(first).toMatchObject({ url: 'http://a/x.jpg', cls: 'error', sent: false, final: false, attempt: 1 });
    const last = lostOutcome({ url: 'http://a/x.jpg', attempt: 3 }, 3);
    expect(last).toMatchObject({ cls: 'error', sent: false, final: true, attempt: 3 });
    expect(last.reason).toMatch(/worker died.*try 3 of 3/);
  });
});
