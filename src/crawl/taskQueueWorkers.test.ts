import { polling, workersLine } from './taskQueueWorkers';

describe('the workers polling a task queue, as crawl status says them', () => {
  it('names those polling lately, and says what to do when none is', () => {
    const seen = [{ identity: '11@a', lastSeenS: 1 }, { identity: '22@b', lastSeenS: 70 }, { identity: '33@c', lastSeenS: 400 }];
    expect(polling(seen).map((w) => w.identity)).toEqual(['11@a', '22@b']);
    expect(workersLine('image-crawler', seen)).toBe('2 worker(s) poll task queue image-crawler: 11@a, 22@b 70 s ago');
    const many = Array.from({ length: 7 }, (_, i) => ({ identity: `${i}@h`, lastSeenS: 0 }));
    expect(workersLine('q', many)).toBe('7 worker(s) poll task queue q: 0@h, 1@h, 2@h, 3@h, 4@h, and 2 more');
    // A worker gone a while ago: the server still lists it for some minutes.
    expect(workersLine('q', [{ identity: '33@c', lastSeenS: 400 }])).toBe('no worker polls task queue q (the last, 33@c, 400 s ago): nothing of its sources is crawled until one runs (`crawl worker`, with the same CRAWL_TASK_QUEUE and TEMPORAL_ADDRESS)');
    expect(workersLine('q', [])).toMatch(/^no worker polls task queue q: nothing/);
  });
});
