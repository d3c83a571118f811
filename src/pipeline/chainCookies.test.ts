import { absorbSetCookies, cookieHeader, MAX_CHAIN_COOKIE_CHARS, MAX_CHAIN_COOKIES } from './chainCookies';

const at = (u: string) => new URL(u);
/** The chain after each response in turn: [Set-Cookie values, the URL that answered them]. */
const chainOf = (...steps: [string[], string][]) => steps.reduce<ReturnType<typeof absorbSetCookies>>((chain, [values, from]) => absorbSetCookies(chain, values, at(from)), undefined);

describe('cookies within one redirect chain', () => {
  it('sends a cookie back to the host that set it, on the paths it covers', () => {
    const chain = chainOf([['a=1; Path=/img', 'b=2'], 'http://site.example/img/x/1.jpg?sig=abc']);
    // b has no Path: the default is the request's directory.
    expect(cookieHeader(chain, at('http://site.example/img/x/2.jpg'))).toBe('b=2; a=1');
    expect(cookieHeader(chain, at('http://site.example/img/2.jpg'))).toBe('a=1');
    expect(cookieHeader(chain, at('http://site.example/images/2.jpg'))).toBeUndefined();
    expect(cookieHeader(chain, at('http://other.example/img/x/2.jpg'))).toBeUndefined();
    expect(cookieHeader(chain, at('http://cdn.site.example/img/x/2.jpg'))).toBeUndefined();
    // Where it came from is kept without the query (a signed URL's is most of its length).
    expect(chain!.map((c) => c.from)).toEqual(['http://site.example/img/x/1.jpg', 'http://site.example/img/x/1.jpg']);
  });

  it('sends a Domain cookie to the site\'s other hosts (a check page on www for an image on img), never to a public suffix or another site', () => {
    const chain = chainOf([['seen=1; Domain=site.com; Path=/', 'foreign=1; Domain=other.com; Path=/'], 'https://www.site.com/check'], [['wide=1; Domain=co.uk; Path=/'], 'https://evil.co.uk/x']);
    expect(cookieHeader(chain, at('https://img.site.com/a.jpg'))).toBe('seen=1');
    expect(cookieHeader(chain, at('https://other.com/a.jpg'))).toBeUndefined();
    expect(cookieHeader(chain, at('https://victim.co.uk/a.jpg'))).toBeUndefined();
  });

  it('sends a Secure cookie over https only, and takes none from http', () => {
    const chain = chainOf([['s=1; Secure; Path=/'], 'https://site.example/1.jpg'], [['t=1; Secure; Path=/'], 'http://site.example/1.jpg']);
    expect(cookieHeader(chain, at('https://site.example/2.jpg'))).toBe('s=1');
    expect(cookieHeader(chain, at('http://site.example/2.jpg'))).toBeUndefined();
  });

  it('replaces a cookie of the same name and path, and forgets an expired one', () => {
    const from = 'http://site.example/1.jpg';
    expect(cookieHeader(chainOf([['t=1; Path=/', 'u=1; Path=/'], from], [['t=2; Path=/', 'u=; Path=/; Max-Age=0'], from]), at(from))).toBe('t=2');
    expect(cookieHeader(chainOf([['t=1; Path=/'], from], [['t=3; Path=/; Expires=Thu, 01 Jan 2015 00:00:00 GMT'], from]), at(from))).toBeUndefined();
  });

  it('leaves out what goes past its bound (cookies travel with the hop in heartbeats and history), and what is no cookie', () => {
    const from = 'http://site.example/1.jpg';
    const chain = chainOf([[`big=${'v'.repeat(MAX_CHAIN_COOKIE_CHARS)}; Path=/`, 'small=1; Path=/', '=nameless', 'not a cookie'], from]);
    expect(cookieHeader(chain, at(from))).toBe('small=1');
    const many = chainOf([Array.from({ length: 20 }, (_, i) => `c${i}=1; Path=/`), from]);
    expect(many).toHaveLength(MAX_CHAIN_COOKIES);
    expect(cookieHeader(undefined, at(from))).toBeUndefined();
    expect(absorbSetCookies(undefined, [], at(from))).toBeUndefined();
  });
});
