import { catalogEntryName, entriesFor, entryHost, type Catalog } from './catalog';

describe('catalogue entries named by host', () => {
  const catalog: Catalog = new Map([['Bücher.Example', { rate: 0.5 }], ['WWW.Museum.Org.', { rate: 3 }], ['Museum', { rate: 4 }], ['photos.example:8443', { rate: 9 }]]);

  it('takes a dotted name for the host it names, in the form its URLs are crawled under', () => {
    expect(entryHost('Bücher.Example')).toBe('xn--bcher-kva.example');
    expect(entryHost('WWW.Museum.Org.')).toBe('www.museum.org');
    expect(entryHost('photos.example:8443')).toBe('photos.example:8443');
    expect(entryHost('Museum')).toBe('Museum');
    expect(entryHost('a b.example')).toBe('a b.example');
  });

  it('finds a source\'s entry by its own name first, else by its host', () => {
    expect(catalogEntryName(catalog, 'xn--bcher-kva.example')).toBe('Bücher.Example');
    expect(catalogEntryName(catalog, 'www.museum.org')).toBe('WWW.Museum.Org.');
    expect(catalogEntryName(catalog, 'Museum')).toBe('Museum');
    expect(catalogEntryName(catalog, 'museum')).toBeUndefined();
  });

  it('keeps the entries of the sources asked again, whichever way they are named (crawl again)', () => {
    expect([...entriesFor(catalog, new Set(['xn--bcher-kva.example', 'Museum'])).keys()]).toEqual(['Bücher.Example', 'Museum']);
  });
});
