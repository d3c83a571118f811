import { absorbSetCookies, cookieHeader, MAX_CHAIN_COOKIE_CHARS } from './chainCookies';

const at = (u: string) => new URL(u);
const NOW = Date.parse('2026-11-27T12:00:00Z');

describe('cookies within one redirect chain', () => {
  it('sends a cookie back to the host that set it, on the paths it covers', () => {
    const jar = absorbSetCookies(undefined, ['a=1; Path=/img', 'b=2'], at('http://site.example/img/x/1.jpg'), NOW);
    // b has no Path: the default is the request's directory.
    expect(cookieHeader(jar, at('http://site.example/img/x/2.jpg'))).toBe('b=2; a=1');
    expect(cookieHeader(jar, at('http://site.example/img/2.jpg'))).toBe('a=1');
    expect(cookieHeader(jar, at('http://site.example/images/2.jpg'))).toBeUndefined();
    expect(cookieHeader(jar, at('http://other.example/img/x/2.jpg'))).toBeUndefined();
    expect(cookieHeader(jar, at('http://cdn.site.example/img/x/2.jpg'))).toBeUndefined();
  });

  it('keeps a cookie to its host whatever its Domain says, and drops one for a domain not its own', () => {
    const jar = absorbSetCookies(undefined, ['wide=1; Domain=site.example; Path=/', 'foreign=1; Domain=other.example; Path=/'], at('http://www.site.example/1.jpg'), NOW);
    expect(cookieHeader(jar, at('http://www.site.example/2.jpg'))).toBe('wide=1');
    expect(cookieHeader(jar, at('http://site.example/2.jpg'))).toBeUndefined();
    expect(cookieHeader(jar, at('http://other.example/2.jpg'))).toBeUndefined();
  });

  it('sends a Secure cookie over https only, and takes none from http', () => {
    const jar = absorbSetCookies(undefined, ['s=1; Secure; Path=/'], at('https://site.example/1.jpg'), NOW);
    expect(cookieHeader(jar, at('https://site.example/2.jpg'))).toBe('s=1');
    expect(cookieHeader(jar, at('http://site.example/2.jpg'))).toBeUndefined();
    expect(absorbSetCookies(undefined, ['s=1; Secure; Path=/'], at('http://site.example/1.jpg'), NOW)).toBeUndefined();
  });

  it('replaces a cookie of the same name and path, and forgets an expired one', () => {
    let jar = absorbSetCookies(undefined, ['t=1; Path=/', 'u=1; Path=/'], at('http://site.example/1.jpg'), NOW);
    jar = absorbSetCookies(jar, ['t=2; Path=/', 'u=; Path=/; Max-Age=0'], at('http://site.example/1.jpg'), NOW);
    expect(cookieHeader(jar, at('http://site.example/1.jpg'))).toBe('t=2');
    jar = absorbSetCookies(jar, ['t=3; Path=/; Expires=Thu, 01 Jan 2015 00:00:00 GMT'], at('http://site.example/1.jpg'), NOW);
    expect(jar).toBeUndefined();
  });

  it('leaves out what goes past its bound: cookies travel with the hop in heartbeats and history', () => {
    const big = 'v'.repeat(MAX_CHAIN_COOKIE_CHARS);
    const jar = absorbSetCookies(undefined, ['small=1; Path=/', `big=${big}; Path=/`], at('http://site.example/1.jpg'), NOW);
    expect(cookieHeader(jar, at('http://site.example/1.jpg'))).toBe('small=1');
    const many = Array.from({ length: 20 }, (_, i) => `c${i}=1; Path=/`);
    expect(absorbSetCookies(undefined, many, at('http://site.example/1.jpg'), NOW)).toHaveLength(8);
  });
});
