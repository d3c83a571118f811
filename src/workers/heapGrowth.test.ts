import { heapGrowthFromEnv } from './heapGrowth';

describe('CRAWL_HEAP_GROWING_PERCENT', () => {
  const saved = process.env.CRAWL_HEAP_GROWING_PERCENT;
  afterEach(() => {
    if (saved === undefined) delete process.env.CRAWL_HEAP_GROWING_PERCENT;
    else process.env.CRAWL_HEAP_GROWING_PERCENT = saved;
  });

  it('defaults to 200 and takes 0 as "leave V8 alone"', () => {
    delete process.env.CRAWL_HEAP_GROWING_PERCENT;
    expect(heapGrowthFromEnv()).toBe(200);
    process.env.CRAWL_HEAP_GROWING_PERCENT = '0';
    expect(heapGrowthFromEnv()).toBe(0);
    process.env.CRAWL_HEAP_GROWING_PERCENT = '150';
    expect(heapGrowthFromEnv()).toBe(150);
  });

  it.each(['-1', '2.5', 'lots', '5000'])('refuses %s with the variable named', (raw) => {
    process.env.CRAWL_HEAP_GROWING_PERCENT = raw;
    expect(() => heapGrowthFromEnv()).toThrow(/CRAWL_HEAP_GROWING_PERCENT must be an integer from 0 to 1000/);
  });
});
