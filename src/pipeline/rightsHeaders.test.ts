import { readRightsHeaders, rightsFields } from './rightsHeaders';

describe('what an image\'s response headers say of its use', () => {
  const agent = 'PoliteImageCrawler';

  it('keeps the X-Robots-Tag directives for every crawler and for ours, not another crawler\'s', () => {
    const raw = readRightsHeaders({ 'x-robots-tag': ['noai, noimageai', 'googlebot: noindex', 'PoliteImageCrawler: noarchive, NOAI', 'unavailable_after: 25 Jun 2030 15:00:00 PST'] });
    expect(rightsFields(raw, agent).xRobotsTag).toEqual(['noai', 'noimageai', 'noarchive', 'unavailable_after: 25 jun 2030 15:00:00 pst']);
    expect(rightsFields(readRightsHeaders({ 'x-robots-tag': 'otherbot: noindex' }), agent).xRobotsTag).toBeNull();
  });

  it('reads a TDM reservation as true, false or not said, and its policy URL', () => {
    expect(rightsFields(readRightsHeaders({ 'tdm-reservation': '1', 'tdm-policy': ' https://a.example/policy.json ' }), agent)).toEqual({
      xRobotsTag: null, tdmReservation: true, tdmPolicy: 'https://a.example/policy.json',
    });
    expect(rightsFields(readRightsHeaders({ 'tdm-reservation': '0' }), agent).tdmReservation).toBe(false);
    expect(rightsFields(readRightsHeaders({ 'tdm-reservation': 'yes' }), agent).tdmReservation).toBeNull();
  });

  it('keeps nothing for a response without them, and bounds what a hostile header can add', () => {
    expect(readRightsHeaders({ 'content-type': 'image/jpeg' })).toBeUndefined();
    expect(rightsFields(undefined, agent)).toEqual({ xRobotsTag: null, tdmReservation: null, tdmPolicy: null });
    const many = Array.from({ length: 100 }, (_, i) => `d${i}`).join(', ');
    expect(rightsFields(readRightsHeaders({ 'x-robots-tag': many }), agent).xRobotsTag).toHaveLength(20);
    expect(rightsFields(readRightsHeaders({ 'tdm-policy': `https://a.example/${'p'.repeat(5000)}` }), agent).tdmPolicy).toHaveLength(2048);
  });
});
