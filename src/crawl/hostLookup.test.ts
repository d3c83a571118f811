import { NetworkGuard } from '../pipeline/networkGuard';
import { HostNames, hostLookupWarnings, LOOKED_UP, type Lookup } from './hostLookup';

const answers: Record<string, string[] | string> = {
  'images.example': ['93.184.215.10'],
  'intranet.corp': ['10.0.0.5', '10.0.0.6'],
  'split.example': ['10.0.0.7', '93.184.215.11'],
  'typo.exmaple': 'ENOTFOUND',
  'slow.example': 'hang',
};

const lookup: Lookup = (host) => {
  const a = answers[host];
  if (a === 'hang') return new Promise(() => undefined);
  if (typeof a === 'string' || a === undefined) return Promise.reject(Object.assign(new Error(`getaddrinfo ${a} ${host}`), { code: a ?? 'ENOTFOUND' }));
  return Promise.resolve(a);
};

function namesOf(origins: Record<string, number>): HostNames {
  const names = new HostNames();
  for (const [origin, n] of Object.entries(origins)) for (let i = 0; i < n; i++) names.add(origin);
  return names;
}

describe('host names looked up for `crawl check --resolve`', () => {
  it('finds names that do not resolve, and names whose every address the guard refuses', async () => {
    const names = namesOf({ 'images.example': 3, 'intranet.corp:8080': 2, 'intranet.corp': 1, 'split.example': 1, 'typo.exmaple': 4, 'slow.example': 1, '10.0.0.9': 5, '[::1]:80': 1, localhost: 1 });
    const asked: string[] = [];
    const report = await names.resolve(new NetworkGuard([]), (h) => { asked.push(h); return lookup(h); }, { timeoutMs: 50 });
    // IP literals and localhost are the guard's own to judge, without a lookup; a name with two ports is one name.
    expect(asked.sort()).toEqual(['images.example', 'intranet.corp', 'slow.example', 'split.example', 'typo.exmaple']);
    expect(report.unresolved).toEqual([
      { host: 'typo.exmaple', urls: 4, error: 'no such host (ENOTFOUND)' },
      { host: 'slow.example', urls: 1, error: 'no answer from the resolver in time' },
    ]);
    // split.example may be fetched from its public address: not warned of.
    expect(report.refused).toEqual([{ host: 'intranet.corp', urls: 3, reason: 'address 10.0.0.5 is private' }]);
    const [unresolved, refused] = hostLookupWarnings(report);
    expect(unresolved).toMatch(/^5 URL\(s\) are on host names that do not resolve here: typo\.exmaple \(4 URL\(s\): no such host \(ENOTFOUND\)\), slow\.example \(1 URL\(s\): no answer.*: a typo in the manifest, or a lapsed domain\?$/);
    // When no name resolves, the machine's DNS is the likelier cause.
    const offline = await namesOf({ 'typo.exmaple': 1, 'other.example': 1 }).resolve(new NetworkGuard([]), lookup);
    expect(hostLookupWarnings(offline)[0]).toMatch(/: none of the 2 names looked up resolves: does this machine reach a DNS server/);
    expect(refused).toMatch(/^3 URL\(s\) are on host names that resolve only to addresses the network guard refuses.*intranet\.corp \(3 URL\(s\): address 10\.0\.0\.5 is private\)\. `crawl run` crawls them given --allow-network intranet\.corp /);
  });

  it('is silent once the guard opens the name or its addresses', async () => {
    const names = namesOf({ 'intranet.corp': 2, 'images.example': 1 });
    expect(hostLookupWarnings(await names.resolve(new NetworkGuard(['intranet.corp']), lookup))).toEqual([]);
    expect(hostLookupWarnings(await names.resolve(new NetworkGuard(['10.0.0.0/8']), lookup))).toEqual([]);
  });

  it('names the addresses that serve several sources, whose server gets the sum of their rates', async () => {
    const shared: Record<string, string[]> = {
      // A shared host: three sites on one address, one of them by a named source, and IPv6 too.
      'museum.example': ['93.184.216.7', '2606:2800:21f::7'], 'gallery.example': ['93.184.216.7', '2606:2800:21f::7'], 'img.archive.example': ['93.184.216.7'],
      // One site's two names in one source share its address with nobody else.
      'a.solo.example': ['93.184.217.1'], 'b.solo.example': ['93.184.217.1'],
      // Round-robin names meeting on one address of several.
      'rr1.example': ['93.184.218.1', '93.184.218.2'], 'rr2.example': ['93.184.218.2', '93.184.218.3'],
      'alone.example': ['93.184.218.9'],
    };
    const names = new HostNames();
    names.add('museum.example');
    names.add('gallery.example');
    names.add('gallery.example');
    names.add('img.archive.example', 'archive');
    names.add('a.solo.example', 'solo');
    names.add('b.solo.example', 'solo');
    names.add('rr1.example');
    names.add('rr2.example:8443');
    names.add('alone.example');
    const report = await names.resolve(new NetworkGuard([]), async (h) => shared[h]!);
    expect(report.sharedAddresses).toEqual([
      { address: '93.184.216.7', sources: [{ source: 'archive', host: 'img.archive.example' }, { source: 'gallery.example', host: 'gallery.example' }, { source: 'museum.example', host: 'museum.example' }] },
      { address: '93.184.218.2', sources: [{ source: 'rr1.example', host: 'rr1.example' }, { source: 'rr2.example:8443', host: 'rr2.example' }] },
    ]);
    const rates: Record<string, number> = { archive: 2, 'gallery.example': 1, 'museum.example': 1, 'rr1.example': 1, 'rr2.example:8443': 1 };
    const [warning] = hostLookupWarnings(report, (s) => rates[s]);
    expect(warning).toBe('host names of several sources resolve to one address: 93.184.216.7: 3 sources, 4/s in all ("archive" (img.archive.example), gallery.example, museum.example); ' +
      '93.184.218.2: 2 sources, 2/s in all (rr1.example, rr2.example:8443). Each source keeps to its own rate, so where such an address is one server ' +
      '(shared hosting, not a CDN\'s), it gets their sum: give their URLs one "source" to hold it to one rate, or lower their rates in the catalogue');
    // A source's names on one address, or names the guard refuses, are no warning.
    const one = new HostNames();
    one.add('a.solo.example', 'solo');
    one.add('b.solo.example', 'solo');
    expect(hostLookupWarnings(await one.resolve(new NetworkGuard([]), async (h) => shared[h]!))).toEqual([]);
    const refused = new HostNames();
    refused.add('x.corp');
    refused.add('y.corp');
    expect(hostLookupWarnings(await refused.resolve(new NetworkGuard([]), async () => ['10.0.0.5']))[0]).toMatch(/^2 URL\(s\) are on host names that resolve only to addresses the network guard refuses/);
    expect(hostLookupWarnings(await refused.resolve(new NetworkGuard([]), async () => ['10.0.0.5']))).toHaveLength(1);
  });

  it('looks up only the names with the most URLs, and says how many URLs were left out', async () => {
    const names = new HostNames();
    names.add('busy.example');
    names.add('busy.example');
    for (let i = 0; i < LOOKED_UP + 2; i++) names.add(`h${i}.example`);
    let asked = 0;
    const report = await names.resolve(new NetworkGuard([]), async () => { asked++; return [`93.184.${asked >> 8}.${asked & 255}`]; });
    expect(asked).toBe(LOOKED_UP);
    expect(report).toMatchObject({ looked: LOOKED_UP, urlsNotLooked: 3 });
    expect(hostLookupWarnings(report)).toEqual([`3 URL(s) on host names past the ${LOOKED_UP} with the most URLs were not looked up`]);
  });
});
