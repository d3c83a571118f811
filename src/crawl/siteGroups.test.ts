import { siteGroups, siteGroupsWarning } from './siteGroups';

describe('hosts of one site crawled as sources of their own', () => {
  it('groups hosts by their registrable domain, the public-suffix list\'s private part included', () => {
    const groups = siteGroups(['img1.a.example.com', 'img2.a.example.com', 'cdn.example.com', 'x.github.io', 'y.github.io', 'www.b.co.uk', 'static.b.co.uk:8443', '127.0.0.1:8080', '127.0.0.2:8080', 'c.example.org']);
    expect(groups).toEqual([
      { site: 'example.com', hosts: ['cdn.example.com', 'img1.a.example.com', 'img2.a.example.com'] },
      { site: 'b.co.uk', hosts: ['static.b.co.uk:8443', 'www.b.co.uk'] },
    ]);
    expect(siteGroupsWarning(groups)).toBe('5 sources are hosts of 2 sites: example.com (cdn.example.com, img1.a.example.com, img2.a.example.com); ' +
      'b.co.uk (static.b.co.uk:8443, www.b.co.uk); each sends at its own rate, so if a site\'s hosts share its servers, they get the sum: ' +
      'give a site\'s URLs one "source" to hold it to one rate');
  });

  it('leaves a host with and without www. to its own warning, unless the site has more hosts', () => {
    expect(siteGroups(['a.example.com', 'www.a.example.com'], ['a.example.com'])).toEqual([]);
    expect(siteGroups(['a.example.com', 'www.a.example.com', 'img.a.example.com'], ['a.example.com'])).toHaveLength(1);
    expect(siteGroupsWarning([])).toBeUndefined();
  });

  it('names five sites and four hosts each, and counts the rest', () => {
    const hosts = Array.from({ length: 7 }, (_, s) => Array.from({ length: 6 }, (_, h) => `h${h}.site${s}.com`)).flat();
    const warning = siteGroupsWarning(siteGroups(hosts))!;
    expect(warning).toMatch(/^42 sources are hosts of 7 sites: site0\.com \(h0\.site0\.com, h1\.site0\.com, h2\.site0\.com, h3\.site0\.com, and 2 more\); /);
    expect(warning).toMatch(/site4\.com \([^)]*\); and 2 more sites; each sends/);
  });
});
