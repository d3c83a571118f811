import { checkMonitorInput, checkWorkItems, monitorIdProblem } from './inputChecks';
import { PATCH_LEVEL } from './patchLevel';

const problemOf = (input: unknown) => {
  const checked = checkMonitorInput(input);
  return 'problem' in checked ? checked.problem : undefined;
};

describe('a monitor start input written by hand', () => {
  it('is taken as crawl start and the README write it, an inline chunk counted from its URLs', () => {
    const readme = {
      source: 'museum', config: { rate: 2 }, options: { finishWhenDrained: false },
      governorConfig: { globalCeiling: 10, adaptive: { maxRetryAfterMs: 3_600_000 } },
      work: [{ chunkId: 'c1', urls: ['https://museum.example/a.jpg', 'https://museum.example/b.jpg'] }],
    };
    expect(checkMonitorInput(readme)).toEqual({ input: { ...readme, work: [{ chunkId: 'c1', count: 2, urls: readme.work[0]!.urls }] } });
    const fromCrawlStart = {
      source: 'a.example', config: {}, options: { taskQueue: 'image-crawler' }, patchLevel: PATCH_LEVEL,
      work: [{ idPrefix: 'm1-a-', spoolPrefix: 'chunks/m1/a/', first: 0, last: 3, chunkSize: 1000, lastCount: 17 }],
    };
    expect(checkMonitorInput(fromCrawlStart)).toEqual({ input: fromCrawlStart });
  });

  it.each([
    [{ config: { rate: 1 } }, /"source" .* is required/],
    [{ source: 'm', config: { rate: 'fast' } }, /^config: rate must be a finite number of requests per second$/],
    [{ source: 'm', config: { Rate: 2 } }, /"config" has unknown field "Rate" \(its fields are imageCount, rate, burst, maxConnections\)/],
    [{ source: 'm', cofig: { rate: 2 } }, /the input has unknown field "cofig"/],
    [{ source: 'm', config: { maxConnections: 0 } }, /^config: maxConnections must be a whole number of requests open at once from 1 to 4096$/],
    [{ source: 'm', work: 'https://a.example/1.jpg' }, /work must be a list of chunks such as \[\{"chunkId": "c1", "urls": \[/],
    [{ source: 'm', work: [{ chunkId: 'c1', count: 1, urls: ['a', 'b', 'c'] }] }, /chunk "c1": "count" is 1 but it lists 3 URLs \(count may be left out\)/],
    [{ source: 'm', work: [{ chunkId: 'c1', url: 'https://a.example/1.jpg' }] }, /chunk "c1" has unknown field "url"/],
    [{ source: 'm', work: [{ urls: ['https://a.example/1.jpg'] }] }, /a chunk needs a "chunkId"/],
    [{ source: 'm', work: [{ chunkId: 'c1', count: 5 }] }, /chunk "c1" has neither "urls" nor a "spool" file/],
    [{ source: 'm', options: { finishWhenDrained: 'no' } }, /options\.finishWhenDrained must be true or false/],
    [{ source: 'm', options: { maxBatches: 0 } }, /options\.maxBatches must be a whole number >= 1/],
    [{ source: 'm', governorConfig: { globalCeiling: 0 } }, /governorConfig\.globalCeiling: rate must be greater than 0/],
    [{ source: 'm', governorConfig: { adaptive: { maxRetryAfter: 60_000 } } }, /governorConfig\.adaptive has unknown field "maxRetryAfter" \(its fields are floorRate, rampSeconds, maxRetryAfterMs/],
    [{ source: 'm', governorConfig: { breaker: { minSamples: '20' } } }, /governorConfig\.breaker\.minSamples must be a number >= 0/],
    [['m'], /the input must be an object/],
  ])('%j is refused, saying why', (input, why) => {
    expect(problemOf(input)).toMatch(why);
  });

  it('must come to the workflow id its source derives from, unless crawl start or a continue-as-new wrote it', () => {
    expect(monitorIdProblem({ source: 'museum' }, 'crawl-monitor:museum')).toBeUndefined();
    expect(monitorIdProblem({ source: 'museum' }, 'crawl-monitor:museum.example')).toBe(
      'the workflow id of source "museum"\'s monitor must be crawl-monitor:museum, not crawl-monitor:museum.example: a source has one monitor, which `crawl` commands find by that id');
    expect(monitorIdProblem({ source: 'museum', patchLevel: PATCH_LEVEL }, 'elsewhere')).toBeUndefined();
  });

  it('takes fields it does not know from input that carries a patch level (a newer build, during a rollback)', () => {
    expect(problemOf({ source: 'm', patchLevel: PATCH_LEVEL + 1, futureField: 1, options: { futureOption: true } })).toBeUndefined();
    expect(problemOf({ source: 'm', patchLevel: PATCH_LEVEL + 1, config: { rate: -1 } })).toMatch(/rate must be greater than 0/);
  });
});

describe('addWork chunks', () => {
  it('keeps the usable ones and says what is wrong with each other one', () => {
    const checked = checkWorkItems([
      { chunkId: 'ok', urls: ['https://a.example/1.jpg'] },
      'https://a.example/2.jpg',
      { chunkId: 'short', count: 2, urls: ['https://a.example/3.jpg'] },
      { chunkId: 'spooled', count: 40, spool: 'chunks/a/0.txt' },
      { idPrefix: 'p-', spoolPrefix: 's/', first: 2, last: 1, chunkSize: 10, lastCount: 10 },
    ]);
    expect(checked.items).toEqual([
      { chunkId: 'ok', count: 1, urls: ['https://a.example/1.jpg'] },
      { chunkId: 'spooled', count: 40, spool: 'chunks/a/0.txt' },
    ]);
    expect(checked.problems).toEqual([
      'work item 2 must be a chunk such as {"chunkId": "c1", "urls": ["https://a.example/1.jpg"]}, not "https://a.example/2.jpg"',
      'chunk "short": "count" is 2 but it lists 1 URL (count may be left out)',
      'chunk range "p-": needs first <= last and lastCount <= chunkSize',
    ]);
  });
});
