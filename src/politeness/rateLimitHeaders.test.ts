import { quotaText, quotaWaitMs, readSiteQuota } from './rateLimitHeaders';

const NOW = Date.parse('2026-12-03T12:00:00Z');
const headers = (h: Record<string, string>) => (name: string) => h[name];

describe('readSiteQuota', () => {
  it('reads the RateLimit list of the current draft, the policy with the fewest units left binding', () => {
    expect(readSiteQuota(headers({ ratelimit: '"default";r=0;t=30' }), NOW)).toEqual({ remaining: 0, resetAtMs: NOW + 30_000 });
    expect(readSiteQuota(headers({ ratelimit: '"burst";r=7;t=1, "daily";r=0;t=3600' }), NOW)).toEqual({ remaining: 0, resetAtMs: NOW + 3_600_000 });
    // Two policies spent: a request may go when the later of them resets.
    expect(readSiteQuota(headers({ ratelimit: '"a";r=0;t=5, "b";r=0;t=60' }), NOW)).toEqual({ remaining: 0, resetAtMs: NOW + 60_000 });
    expect(readSiteQuota(headers({ ratelimit: '"default";r=12' }), NOW)).toEqual({ remaining: 12 });
  });

  it('reads the dictionary of drafts -06 and -07', () => {
    expect(readSiteQuota(headers({ ratelimit: 'limit=100, remaining=0, reset=45' }), NOW)).toEqual({ remaining: 0, resetAtMs: NOW + 45_000, limit: 100 });
  });

  it('reads the separate headers, X- ones too, a large reset as a Unix time on the site\'s clock', () => {
    expect(readSiteQuota(headers({ 'ratelimit-remaining': '3', 'ratelimit-reset': '10', 'ratelimit-limit': '60' }), NOW)).toEqual({ remaining: 3, resetAtMs: NOW + 10_000, limit: 60 });
    expect(readSiteQuota(headers({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(NOW / 1000 + 90), 'x-ratelimit-limit': '5000' }), NOW)).toEqual({ remaining: 0, resetAtMs: NOW + 90_000, limit: 5000 });
    // The site's clock 10 minutes ahead of ours: its reset is 90 s after its own Date.
    const ahead = NOW + 600_000;
    expect(readSiteQuota(headers({ date: new Date(ahead).toUTCString(), 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(ahead / 1000 + 90) }), NOW)).toEqual({ remaining: 0, resetAtMs: NOW + 90_000 });
    expect(readSiteQuota(headers({ 'x-rate-limit-remaining': '0', 'x-rate-limit-reset': '2' }), NOW)).toEqual({ remaining: 0, resetAtMs: NOW + 2_000 });
    // A list (draft-polli: "100, 100;w=60") gives its first member.
    expect(readSiteQuota(headers({ 'ratelimit-remaining': '0', 'ratelimit-limit': '100, 100;w=60' }), NOW)).toEqual({ remaining: 0, limit: 100 });
  });

  it('states nothing for missing or unreadable values', () => {
    expect(readSiteQuota(headers({}), NOW)).toBeUndefined();
    expect(readSiteQuota(headers({ 'x-ratelimit-remaining': 'lots' }), NOW)).toBeUndefined();
    expect(readSiteQuota(headers({ 'x-ratelimit-remaining': '-1' }), NOW)).toBeUndefined();
    expect(readSiteQuota(headers({ ratelimit: 'garbage' }), NOW)).toBeUndefined();
    expect(readSiteQuota(headers({ 'x-ratelimit-limit': '100' }), NOW)).toBeUndefined();
    // A window's quota of none at all: a misconfiguration, not a limit to keep to.
    expect(readSiteQuota(headers({ 'x-ratelimit-limit': '0', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '60' }), NOW)).toBeUndefined();
    expect(readSiteQuota(headers({ ratelimit: 'limit=0, remaining=0, reset=60' }), NOW)).toBeUndefined();
    // An unreadable reset leaves the count: the wait is then the default.
    expect(readSiteQuota(headers({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': 'soon' }), NOW)).toEqual({ remaining: 0 });
  });
});

describe('quotaWaitMs', () => {
  it('waits for the reset only once none is left, the default when no reset was given', () => {
    expect(quotaWaitMs({ remaining: 1, resetAtMs: NOW + 30_000 }, NOW, 5_000)).toBeUndefined();
    expect(quotaWaitMs({ remaining: 0, resetAtMs: NOW + 30_000 }, NOW, 5_000)).toBe(30_000);
    expect(quotaWaitMs({ remaining: 0 }, NOW, 5_000)).toBe(5_000);
    expect(quotaWaitMs({ remaining: 0, resetAtMs: NOW - 1_000 }, NOW, 5_000)).toBe(0);
    expect(quotaWaitMs(undefined, NOW, 5_000)).toBeUndefined();
  });

  it('says the quota in words', () => {
    expect(quotaText({ limit: 100 })).toBe('none of its 100 requests left');
    expect(quotaText({})).toBe('no requests left');
  });
});
