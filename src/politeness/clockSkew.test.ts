import { ClockSkewWatch } from './clockSkew';

describe('ClockSkewWatch', () => {
  it('says nothing of a clock that agrees, whatever the trips take', () => {
    const watch = new ClockSkewWatch();
    for (let i = 0; i < 200; i++) expect(watch.sample(i % 10 === 0 ? 3 : 40 + (i % 7) * 500, i * 1000)).toBeUndefined();
  });

  it('says at once when the worker is behind (a task cannot arrive before it was scheduled), then at most every ten minutes', () => {
    const watch = new ClockSkewWatch();
    expect(watch.sample(-100, 0)).toBeUndefined(); // within what is not worth saying
    const first = watch.sample(-2_950, 1_000);
    expect(first).toEqual({ skewMs: -2_950, note: expect.stringMatching(/^this worker's clock is at least 3\.0 s behind the Temporal server's: it sends each grant's requests that much late, into the next grant's window/) });
    expect(watch.sample(-2_900, 60_000)).toBeUndefined();
    expect(watch.sample(-2_900, 1_000 + 10 * 60_000)).toMatchObject({ skewMs: -2_950 });
  });

  it('calls a worker ahead only when every recent task seemed to take long, with enough of them', () => {
    const watch = new ClockSkewWatch();
    for (let i = 0; i < 31; i++) expect(watch.sample(5_000 + i, i)).toBeUndefined();
    expect(watch.sample(5_000, 31)?.note).toMatch(/^this worker's clock looks 5\.0 s ahead of the Temporal server's \(or each of its last 32 activities took that long to reach it\)/);
    // One prompt task among them: the trips were long, not the clock.
    const other = new ClockSkewWatch();
    other.sample(20, 0);
    for (let i = 1; i < 64; i++) expect(other.sample(5_000, i)).toBeUndefined();
  });
});
