import { grantItemCount, MAX_EXTRA_ITEMS, slotsNeeded } from './grantItems';

describe('URLs per grant', () => {
  it('is one per slot while every URL needs a request', () => {
    expect(grantItemCount(40, 500)).toBe(40);
    expect(grantItemCount(40, 500, 0 / 40)).toBe(40);
    expect(grantItemCount(40, 12)).toBe(12);
  });

  it('adds as many as the last grant settled without a request predicts, so the slots still go to requests', () => {
    // Half were ruled out: 80 URLs, of which about 40 need the 40 slots.
    expect(grantItemCount(40, 500, 20 / 40)).toBe(80);
    expect(grantItemCount(40, 500, 20 / 80)).toBe(54);
  });

  it('takes the rest of the chunk when robots.txt ruled out (nearly) everything, within a bound', () => {
    expect(grantItemCount(40, 460, 39 / 40)).toBe(460);
    expect(grantItemCount(40, 5_000, 40 / 40)).toBe(40 + MAX_EXTRA_ITEMS);
    expect(grantItemCount(40, 5_000, 30 / 40)).toBe(160);
  });

  it('plans slots for the URLs that will need a request, at least one per batch', () => {
    expect(slotsNeeded(500, undefined)).toBe(500);
    expect(slotsNeeded(500, 0)).toBe(500);
    expect(slotsNeeded(500, 0.5)).toBe(250);
    expect(slotsNeeded(500, 1)).toBe(5); // never trusted to be quite everything
    expect(slotsNeeded(3, 0.98)).toBe(1);
    expect(slotsNeeded(0, 0.5)).toBe(0);
  });
});
