import type { MonitoringUpdate } from './status';
import { progressBarLine } from './progressBar';

const global: MonitoringUpdate['global'] = {
  sources: 4, running: 4, paused: 0, halted: 1, waiting: 1, ratePerS: 42, targetPerS: 42, done: 1_200, errors: 3, retries: 0, finishedUrls: 1_234,
  totalUrls: 5_678, imagesPerS: 40, secondsLeft: 700, workersBehind: 0, connectionsFull: 0, networkDown: 0,
};
const text = '21% 1234/5678 urls, 1200 done, 3 errors, 42/s, 4 running (1 waiting), 1 halted, ~12m left';

describe('crawl run\'s progress bar', () => {
  it('fits the terminal: a narrower bar, then none, then the line cut', () => {
    expect(progressBarLine(global, 200)).toBe(`[#####....................] ${text}`);
    expect(progressBarLine(global)).toBe(progressBarLine(global, 200));
    // 80 columns: a bar of what is left.
    expect(progressBarLine({ ...global, halted: 0, waiting: 0 }, 80)).toBe('[#........] 21% 1234/5678 urls, 1200 done, 3 errors, 42/s, 4 running, ~12m left');
    expect(progressBarLine(global, 100)).toBe(`[#......] ${text}`);
    expect(progressBarLine(global, 95)).toBe(text);
    expect(progressBarLine(global, 40)).toBe('21% 1234/5678 urls, 1200 done, 3 error…');
    for (const columns of [2, 30, 80, 100, 117, 118, 119]) expect(progressBarLine(global, columns).length).toBeLessThan(columns);
  });

  it('tells the tries that failed and go again, when there are any', () => {
    expect(progressBarLine({ ...global, errors: 0, retries: 51 })).toMatch(/ 1200 done, 0 errors \(51 retries\), 42\/s,/);
    expect(progressBarLine({ ...global, errors: 1, retries: 1 })).toMatch(/ 1200 done, 1 error \(1 retry\), 42\/s,/);
  });
});
