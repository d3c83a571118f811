import { addInterval, unseenParts, type Intervals } from './chunkRanges';

describe('chunk number intervals', () => {
  it('finds the parts of a range not seen yet', () => {
    const seen: Intervals = [[0, 4], [10, 12], [20, 20]];
    expect(unseenParts(seen, 0, 4)).toEqual([]);
    expect(unseenParts(seen, 3, 11)).toEqual([[5, 9]]);
    expect(unseenParts(seen, 2, 25)).toEqual([[5, 9], [13, 19], [21, 25]]);
    expect(unseenParts([], 3, 5)).toEqual([[3, 5]]);
  });

  it('merges an added range with its neighbours and keeps the list sorted', () => {
    let seen: Intervals = [];
    seen = addInterval(seen, 10, 12);
    seen = addInterval(seen, 0, 4);
    seen = addInterval(seen, 20, 20);
    expect(seen).toEqual([[0, 4], [10, 12], [20, 20]]);
    expect(addInterval(seen, 5, 9)).toEqual([[0, 12], [20, 20]]);
    expect(addInterval(seen, 13, 19)).toEqual([[0, 4], [10, 20]]);
    expect(addInterval(seen, 2, 30)).toEqual([[0, 30]]);
    expect(addInterval(seen, 40, 41)).toEqual([[0, 4], [10, 12], [20, 20], [40, 41]]);
  });
});
