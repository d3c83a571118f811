import { classifyStatus, healthSample, isThrottle, statusReason } from './classify';

describe('error classification', () => {
  it('counts 404 and 410 as link rot, not against the site', () => {
    expect(classifyStatus(404)).toBe('linkrot');
    expect(classifyStatus(410)).toBe('linkrot');
  });
  it('counts 403, 408, 429 and 5xx against the site', () => {
    for (const s of [403, 408, 429, 500, 502, 503, 504]) expect(classifyStatus(s)).toBe('site-error');
  });
  it('treats other 4xx as the URL\'s problem', () => {
    expect(classifyStatus(400)).toBe('url-error');
    expect(classifyStatus(401)).toBe('url-error');
  });
  it('throttles on 429 and 503 and on their kin 509 and 529, not on other failures', () => {
    for (const s of [429, 503, 509, 529]) expect(isThrottle(s)).toBe(true);
    for (const s of [undefined, 403, 408, 500, 502, 504, 520]) expect(isThrottle(s)).toBe(false);
  });
  it('does not count content errors or unsent requests as site-health errors', () => {
    expect(healthSample('content', true)).toBe('ok');
    expect(healthSample('linkrot', true)).toBe('ok');
    expect(healthSample('error', true)).toBe('error');
    expect(healthSample('robots', false)).toBe('none');
    expect(healthSample('error', false)).toBe('none');
    // A URL failing again says nothing new of the site; succeeding at last, it counts as ok.
    expect(healthSample('error', true, true)).toBe('repeat');
    expect(healthSample('done', true, true)).toBe('ok');
  });
});

describe('statusReason', () => {
  it('is the code alone where the code says it, and adds what a misleading one means', () => {
    expect(['404', '410', '500', '429'].map((c) => statusReason(Number(c)))).toEqual(['http 404', 'http 410', 'http 500', 'http 429']);
    expect(statusReason(304)).toBe('http 304: Not Modified, though nothing conditional was asked');
    expect(statusReason(301)).toBe('http 301: a redirect without a Location header');
  });
});
