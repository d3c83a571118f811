import { blockSource, clearSourceBlocks, isSourceBlocked } from './sourceBlocks';

describe('source blocks after a 429/503', () => {
  beforeEach(() => clearSourceBlocks());

  it('holds a source until the block ends, the latest and longest 429 counting', () => {
    blockSource('a', 10_000, 0);
    blockSource('a', 6_000, 4_000);
    expect(isSourceBlocked('a', 9_999)).toBe(true);
    expect(isSourceBlocked('b', 9_999)).toBe(false);
    expect(isSourceBlocked('a', 10_000)).toBe(false);
  });

  it('ends a block at the cap a later grant carries, counted from the latest 429', () => {
    // Held for 15 min; the crawl started again with --max-retry-after 30.
    blockSource('a', 900_000, 0);
    blockSource('a', 5_000, 2_000);
    expect(isSourceBlocked('a', 31_999, 30_000)).toBe(true);
    expect(isSourceBlocked('a', 32_000, 30_000)).toBe(false);
    // Under the old cap it still holds.
    expect(isSourceBlocked('a', 32_000, 900_000)).toBe(true);
  });
});
