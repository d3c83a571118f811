import { matches, parseTdmRep, tdmRuleFor, withSiteRule } from './tdmRep';

const at = (path: string) => new URL(`https://site.example${path}`);

describe('TDMRep file (/.well-known/tdmrep.json)', () => {
  it('reads rules in order, with the reservation as 1 or 0 and the policy when given', () => {
    const rules = parseTdmRep(JSON.stringify([
      { location: '/directory-a/', 'tdm-reservation': 1 },
      { location: '/directory-b/images/*.jpg', 'tdm-reservation': 0 },
      { location: '/', 'tdm-reservation': 1, 'tdm-policy': 'https://site.example/policies/policy.json' },
    ]));
    expect(rules).toEqual([
      { pattern: '/directory-a/', reservation: '1' },
      { pattern: '/directory-b/images/*.jpg', reservation: '0' },
      { pattern: '/', reservation: '1', policy: 'https://site.example/policies/policy.json' },
    ]);
    // The first rule that matches applies, not the longest.
    expect(tdmRuleFor(rules, at('/directory-a/x.jpg'))?.reservation).toBe('1');
    expect(tdmRuleFor(rules, at('/directory-b/images/y.jpg'))?.reservation).toBe('0');
    expect(tdmRuleFor(rules, at('/directory-b/images/y.png'))).toMatchObject({ reservation: '1', policy: 'https://site.example/policies/policy.json' });
  });

  it('has no rules for anything but a JSON array, and skips entries without a path', () => {
    for (const text of ['', 'not json', '{"location": "/", "tdm-reservation": 1}', 'null', '<html>', '[1, "x", null]']) expect(parseTdmRep(text)).toEqual([]);
    expect(parseTdmRep('\uFEFF[{"location": "/", "tdm-reservation": 1}]')).toEqual([{ pattern: '/', reservation: '1' }]);
    expect(parseTdmRep(JSON.stringify([{ 'tdm-reservation': 1 }, { location: 'images/', 'tdm-reservation': 1 }, { location: '/ok', 'tdm-reservation': '0' }]))).toEqual([{ pattern: '/ok', reservation: '0' }]);
  });

  it('keeps a rule whose reservation is neither 1 nor 0 as unset: it matches, and says nothing', () => {
    const rules = parseTdmRep(JSON.stringify([{ location: '/odd/', 'tdm-reservation': 'yes' }, { location: '/', 'tdm-reservation': 1 }]));
    expect(tdmRuleFor(rules, at('/odd/a.jpg'))).toEqual({ pattern: '/odd/' });
    expect(withSiteRule(undefined, tdmRuleFor(rules, at('/odd/a.jpg')))).toBeUndefined();
  });

  it('matches robots.txt patterns: a prefix, * for any characters, $ for the end, case-sensitively', () => {
    expect(matches('/images/', '/images/a.jpg')).toBe(true);
    expect(matches('/images/', '/Images/a.jpg')).toBe(false);
    expect(matches('/*.jpg$', '/a/b.jpg')).toBe(true);
    expect(matches('/*.jpg$', '/a/b.jpg?size=2')).toBe(false);
    expect(matches('/*.jpg', '/a/b.jpg?size=2')).toBe(true);
    expect(matches('/exact$', '/exact')).toBe(true);
    expect(matches('/exact$', '/exactly')).toBe(false);
    expect(matches('/a*b*c$', '/axxbyyc')).toBe(true);
    expect(matches('/a*b*c$', '/axxcyyb')).toBe(false);
    // The last piece may not overlap what the pieces before it took.
    expect(matches('/ab*b$', '/ab')).toBe(false);
    expect(matches('/ab*b$', '/abb')).toBe(true);
    expect(matches('*', '/anything')).toBe(true);
  });

  it('compares percent-escapes of unreserved characters decoded, on both sides', () => {
    const rules = parseTdmRep(JSON.stringify([{ location: '/%7Euser/', 'tdm-reservation': 1 }, { location: '/a%2Fb', 'tdm-reservation': 0 }]));
    expect(tdmRuleFor(rules, at('/~user/photo.jpg'))?.reservation).toBe('1');
    expect(tdmRuleFor(rules, at('/%7euser/photo.jpg'))?.reservation).toBe('1');
    // An escaped slash is not a slash.
    expect(tdmRuleFor(rules, at('/a%2fb'))?.reservation).toBe('0');
    expect(tdmRuleFor(rules, at('/a/b'))).toBeUndefined();
  });

  it('matches a long path against many wildcards without backtracking', () => {
    // As a regular expression (/^\/(.*a){200}$/) this does not finish within the test's timeout.
    expect(matches(`/${'*a'.repeat(200)}$`, `/${'a'.repeat(100_000)}b`)).toBe(false);
    expect(matches(`/${'*a'.repeat(200)}$`, `/${'a'.repeat(100_000)}`)).toBe(true);
  });

  it('lets the response\'s own header supersede the file, property by property', () => {
    const rule = { pattern: '/', reservation: '1' as const, policy: 'https://site.example/p.json' };
    expect(withSiteRule(undefined, rule)).toEqual({ tdmReservation: '1', tdmPolicy: 'https://site.example/p.json' });
    expect(withSiteRule({ tdmReservation: '0' }, rule)).toEqual({ tdmReservation: '0', tdmPolicy: 'https://site.example/p.json' });
    expect(withSiteRule({ xRobotsTag: ['noai'] }, rule)).toEqual({ xRobotsTag: ['noai'], tdmReservation: '1', tdmPolicy: 'https://site.example/p.json' });
    expect(withSiteRule({ xRobotsTag: ['noai'] }, undefined)).toEqual({ xRobotsTag: ['noai'] });
  });
});
