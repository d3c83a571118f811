import { readRightsHeaders, rightsFields } from './rightsHeaders';

describe('what an image\'s response headers say of its use', () => {
  const agent = 'PoliteImageCrawler';
  const AT = 'https://site.example/img/a.jpg';

  it('keeps the X-Robots-Tag directives for every crawler and for ours, not another crawler\'s', () => {
    const raw = readRightsHeaders({ 'x-robots-tag': ['noai, noimageai', 'googlebot: noindex', 'PoliteImageCrawler: noarchive, NOAI', 'unavailable_after: 25 Jun 2030 15:00:00 PST'] });
    expect(rightsFields(raw, agent, AT).xRobotsTag).toEqual(['noai', 'noimageai', 'noarchive', 'unavailable_after: 25 jun 2030 15:00:00 pst']);
    expect(rightsFields(readRightsHeaders({ 'x-robots-tag': 'otherbot: noindex' }), agent, AT).xRobotsTag).toBeNull();
  });

  it('reads a TDM reservation as true, false or not said, and its policy URL', () => {
    expect(rightsFields(readRightsHeaders({ 'tdm-reservation': '1', 'tdm-policy': ' https://a.example/policy.json ' }), agent, AT)).toEqual({
      xRobotsTag: null, tdmReservation: true, tdmPolicy: 'https://a.example/policy.json', licenseLink: null, lastModified: null,
    });
    expect(rightsFields(readRightsHeaders({ 'tdm-reservation': '0' }), agent, AT).tdmReservation).toBe(false);
    expect(rightsFields(readRightsHeaders({ 'tdm-reservation': 'yes' }), agent, AT).tdmReservation).toBeNull();
  });

  it('keeps nothing for a response without them, and bounds what a hostile header can add', () => {
    expect(readRightsHeaders({ 'content-type': 'image/jpeg' })).toBeUndefined();
    expect(rightsFields(undefined, agent, AT)).toEqual({ xRobotsTag: null, tdmReservation: null, tdmPolicy: null, licenseLink: null, lastModified: null });
    const many = Array.from({ length: 100 }, (_, i) => `d${i}`).join(', ');
    expect(rightsFields(readRightsHeaders({ 'x-robots-tag': many }), agent, AT).xRobotsTag).toHaveLength(10);
    expect(rightsFields(readRightsHeaders({ 'x-robots-tag': `${'x'.repeat(5000)}, noai` }), agent, AT).xRobotsTag).toEqual(['noai']);
    expect(rightsFields(readRightsHeaders({ 'tdm-policy': `https://a.example/${'p'.repeat(5000)}`, link: `<https://a.example/${'l'.repeat(5000)}>; rel=license` }), agent, AT))
      .toMatchObject({ tdmPolicy: null, licenseLink: null });
  });

  it('reads Last-Modified in each of HTTP\'s three date forms as an ISO time, and nothing that is not one', () => {
    const modified = (v: string) => rightsFields(readRightsHeaders({ 'last-modified': v }), agent, AT).lastModified;
    expect(modified('Sun, 06 Nov 1994 08:49:37 GMT')).toBe('1994-11-06T08:49:37.000Z');
    expect(modified('Sunday, 06-Nov-94 08:49:37 GMT')).toBe('1994-11-06T08:49:37.000Z');
    expect(modified('Sun Nov  6 08:49:37 1994')).toBe('1994-11-06T08:49:37.000Z');
    // Date.parse reads these too, each as a date of its own guessing.
    for (const v of ['2024', '12/01/2024', 'yesterday', 'Wed, 31 Feb 2024 10:00:00 GMT', 'Sun, 06 Nov 1994 08:49:37 PST', `Sun, 06 Nov 1994 08:49:37 GMT${' '.repeat(100)}x`]) {
      expect(modified(v)).toBeNull();
    }
    expect(readRightsHeaders({ 'last-modified': 'x'.repeat(100) })).toBeUndefined();
  });

  it('takes a license from a Link header with rel="license", resolved against the image\'s URL, and no other link', () => {
    const link = (...values: string[]) => rightsFields(readRightsHeaders({ link: values }), agent, AT).licenseLink;
    expect(link('<https://creativecommons.org/licenses/by/4.0/>; rel="license"')).toBe('https://creativecommons.org/licenses/by/4.0/');
    expect(link('</style.css>; rel=preload; as=style, </terms/license.html>; rel="alternate license"; title="a, b"')).toBe('https://site.example/terms/license.html');
    expect(link('<https://a.example/license>; rel=License')).toBe('https://a.example/license');
    expect(link('<https://a.example/about-our-license>; rel="author"', '<mailto:licensing@a.example>; rel="license"')).toBeNull();
    // Links that name no license are not kept at all.
    expect(readRightsHeaders({ link: '</style.css>; rel=preload; as=style' })).toBeUndefined();
  });
});
