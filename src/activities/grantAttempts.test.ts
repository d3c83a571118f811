import { GrantAttempts } from './grantAttempts';

describe('GrantAttempts: a newer attempt of a grant replaces the one still running', () => {
  it('stops the earlier attempt and hands over what it finished once it has stopped', async () => {
    const attempts = new GrantAttempts<string[]>();
    const first = attempts.begin('g1');
    expect(await first.takeOver()).toBeUndefined();
    const second = attempts.begin('g1');
    const handed = second.takeOver();
    expect(first.superseded()).toBe(true);
    expect(second.superseded()).toBe(false);
    let settled = false;
    void handed.then(() => { settled = true; });
    await Promise.resolve();
    expect(settled).toBe(false); // waits until the first one has really stopped
    first.release(['a', 'b']);
    expect(await handed).toEqual(['a', 'b']);
    second.release(['a', 'b', 'c']);
    // Both ended: a later attempt starts fresh.
    expect(await attempts.begin('g1').takeOver()).toBeUndefined();
  });

  it('keeps grants apart', async () => {
    const attempts = new GrantAttempts<number>();
    const a = attempts.begin('a');
    const b = attempts.begin('b');
    expect(await b.takeOver()).toBeUndefined();
    expect(a.superseded()).toBe(false);
  });

  it('an attempt that ends after its replacement started does not unregister the replacement', async () => {
    const attempts = new GrantAttempts<number>();
    const first = attempts.begin('g');
    const second = attempts.begin('g');
    first.release(1);
    expect(await second.takeOver()).toBe(1);
    const third = attempts.begin('g');
    const handed = third.takeOver();
    expect(second.superseded()).toBe(true);
    second.release(2);
    expect(await handed).toBe(2);
  });
});
