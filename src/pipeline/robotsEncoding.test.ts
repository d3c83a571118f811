import robotsParser from 'robots-parser';
import { decodeUnreserved, robotsAgentsAsTokens, robotsMatchUrl, robotsRulesDecoded } from './robotsEncoding';

describe('robots.txt percent-encoding (RFC 9309 2.2.2)', () => {
  it('decodes unreserved characters only, and writes the other encodings\' hex in upper case', () => {
    expect(decodeUnreserved('/%7Euser/%62%61%7a')).toBe('/~user/baz');
    expect(decodeUnreserved('/a%2fb/%e3%83%84?q=%3d%41')).toBe('/a%2Fb/%E3%83%84?q=%3DA');
    expect(decodeUnreserved('/100%/x')).toBe('/100%/x');
  });

  it('decodes a URL\'s path and query, and the Allow and Disallow lines\' paths, nothing else', () => {
    expect(robotsMatchUrl('https://a.example/%7Euser/a.jpg?s=%7e')).toBe('https://a.example/~user/a.jpg?s=~');
    expect(robotsRulesDecoded('User-agent: %7Ebot\nDisallow: /%7Euser/ # %7E stays\r\n  allow:/%7epub/*.jpg$\nSitemap: https://a.example/%7Emap.xml\n'))
      .toBe('User-agent: %7Ebot\nDisallow: /~user/ # %7E stays\r\n  allow:/~pub/*.jpg$\nSitemap: https://a.example/%7Emap.xml\n');
  });

  it('makes robots-parser match an encoded rule to a plain URL and a plain rule to an encoded URL, as the RFC asks', () => {
    const allowed = (rules: string, url: string) => robotsParser('https://a.example/robots.txt', robotsRulesDecoded(rules)).isAllowed(robotsMatchUrl(url), 'bot');
    expect(allowed('User-agent: *\nDisallow: /%7Euser/\n', 'https://a.example/~user/a.jpg')).toBe(false);
    expect(allowed('User-agent: *\nDisallow: /~user/\n', 'https://a.example/%7euser/a.jpg')).toBe(false);
    expect(allowed('User-agent: *\nDisallow: /\nAllow: /%7Epublic/\n', 'https://a.example/~public/a.jpg')).toBe(true);
    // A reserved character encoded is another path: /a%2Fb is one segment, /a/b two.
    expect(allowed('User-agent: *\nDisallow: /a%2Fb\n', 'https://a.example/a/b.jpg')).toBe(true);
    // Without the decoding, robots-parser lets both through.
    expect(robotsParser('https://a.example/robots.txt', 'User-agent: *\nDisallow: /%7Euser/\n').isAllowed('https://a.example/~user/a.jpg', 'bot')).toBe(true);
  });
});

describe('robots.txt User-agent lines read as product tokens', () => {
  const rules = (ua: string) => `User-agent: ${ua}\nDisallow: /\n\nUser-agent: *\nAllow: /\n`;
  const allowed = (text: string) => robotsParser('https://a.example/robots.txt', robotsAgentsAsTokens(text)).isAllowed('https://a.example/a.jpg', 'PoliteBot');

  it('holds a group for us whose line says more than our token', () => {
    for (const ua of ['PoliteBot (images)', 'politebot foo', 'PoliteBot; see below', 'PoliteBot/2.0 (+https://a.example)', 'POLITEBOT']) expect(allowed(rules(ua))).toBe(false);
    // Without it, robots-parser matched none of the first three to us: their rules fell to `*`'s.
    expect(robotsParser('https://a.example/robots.txt', rules('politebot foo')).isAllowed('https://a.example/a.jpg', 'PoliteBot')).toBe(true);
  });

  it('leaves other crawlers\' groups and `*` as they are', () => {
    expect(allowed(rules('PoliteBotExtra'))).toBe(true);
    expect(allowed(rules('Polite Bot'))).toBe(true);
    expect(robotsAgentsAsTokens('user-agent:* # all\nUSER-AGENT : a.b-c_d more\r\nUser-agent: (odd)\n')).toBe('user-agent:* # all\nUSER-AGENT : a.b-c_d\r\nUser-agent: (odd)\n');
  });
});

