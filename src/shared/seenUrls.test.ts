import { SeenUrls, fingerprint, fingerprint53, fingerprint53Ascii } from './seenUrls';

describe('SeenUrls', () => {
  it('tells a URL seen before from a new one, across growth of its table', () => {
    const seen = new SeenUrls();
    const url = (i: number) => `https://s${i % 13}.example/images/${i}.jpg`;
    // Counted, not asserted one by one: 50,000 expect() calls alone take a second. (Sizes are
    // small because Math.imul is ~100 times slower inside jest's sandbox than in node.)
    let added = 0;
    for (let i = 0; i < 50_000; i++) if (seen.add(url(i))) added++;
    expect(added).toBe(50_000);
    let again = 0;
    for (let i = 0; i < 50_000; i += 7) if (seen.add(url(i))) again++;
    expect(again).toBe(0);
    expect(seen.size).toBe(50_000);
    expect(seen.add('https://s1.example/images/1.jpg?')).toBe(true);
  });

  it('holds 100,000 distinct URLs without a false duplicate, in under 23 bytes each', () => {
    const seen = new SeenUrls();
    let duplicates = 0;
    for (let i = 0; i < 100_000; i++) if (!seen.add(`https://cdn.example/a/${i.toString(36)}/${i}.jpg`)) duplicates++;
    expect(duplicates).toBe(0);
    expect(seen.bytes / seen.size).toBeLessThan(23);
  });

  it('fingerprints differ for strings one character apart', () => {
    const a = fingerprint('https://a.example/1.jpg');
    expect(fingerprint('https://a.example/1.jpg')).toEqual(a);
    expect(fingerprint('https://a.example/2.jpg')).not.toEqual(a);
    expect(fingerprint('https://a.example/1.jpg ')).not.toEqual(a);
  });

  it('gives 53 bits of the fingerprint as one number, the same from a string and from its ASCII bytes', () => {
    const url = 'https://a.example/photos/1.jpg?w=640';
    const [hi, lo] = fingerprint(url);
    expect(fingerprint53(url)).toBe((hi & 0x1fffff) * 2 ** 32 + lo);
    expect(Number.isSafeInteger(fingerprint53(url))).toBe(true);
    const line = Buffer.from(`{"url":"${url}","x":1}`);
    expect(fingerprint53Ascii(line, 8, 8 + url.length)).toBe(fingerprint53(url));
    expect(fingerprint53Ascii(line, 8, 7 + url.length)).not.toBe(fingerprint53(url));
  });
});
