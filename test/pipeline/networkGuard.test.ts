import { NetworkGuard, refusedAddress } from '../../src/pipeline/networkGuard';

describe('network guard', () => {
  const closed = new NetworkGuard([]);
  it.each(['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '224.0.0.1', '0.0.0.0', '::1', 'fe80::1', 'fc00::1', '::ffff:127.0.0.1', '100.64.0.1'])(
    'refuses %s by default', (ip) => {
      expect(closed.refusal(ip)).toMatch(/not allowed/);
    },
  );
  it('lets public unicast through', () => {
    expect(closed.refusal('93.184.216.34')).toBeUndefined();
    expect(closed.refusal('2606:2800:220:1:248:1893:25c8:1946')).toBeUndefined();
  });
  it('opens exactly the allow-listed ranges and hosts', () => {
    const g = new NetworkGuard(['127.0.0.0/8', 'intranet.example']);
    expect(g.refusal('127.0.0.1')).toBeUndefined();
    expect(g.refusal('127.9.9.9')).toBeUndefined();
    expect(g.refusal('10.0.0.1')).toMatch(/private/);
    expect(g.refusal('10.0.0.1', 'intranet.example')).toBeUndefined();
  });
  it('judges a NAT64 well-known-prefix address by the IPv4 address it reaches', () => {
    // DNS64 answers for IPv4-only sites: public ones pass, internal ones stay refused.
    expect(closed.refusal('64:ff9b::5db8:d822')).toBeUndefined();
    expect(closed.refusal('64:ff9b::a00:1')).toMatch(/NAT64 for 10\.0\.0\.1: .*private/);
    expect(closed.refusal('64:ff9b::7f00:1')).toMatch(/NAT64 for 127\.0\.0\.1: .*loopback/);
    expect(closed.refusal('64:ff9b::a9fe:a9fe')).toMatch(/169\.254\.169\.254.*linkLocal/);
    // Other translation prefixes embed the address differently or not at all.
    expect(closed.refusal('64:ff9b:1::5db8:d822')).toMatch(/not allowed/);
    expect(closed.refusal('2002:5db8:d822::1')).toMatch(/6to4; not allowed/);
    // The allow-list applies to the embedded address, and an allowed prefix is allowed whole.
    expect(new NetworkGuard(['127.0.0.0/8']).refusal('64:ff9b::7f00:1')).toBeUndefined();
    expect(new NetworkGuard(['64:ff9b::/96']).refusal('64:ff9b::a00:1')).toBeUndefined();
  });
  it('reads back from a refusal the address that --allow-network would open', () => {
    expect(refusedAddress(`refused localhost: ${closed.refusal('127.0.0.1')}`)).toBe('127.0.0.1');
    expect(refusedAddress(closed.refusal('fe80::1')!)).toBe('fe80::1');
    expect(refusedAddress(closed.refusal('2002:5db8:d822::1')!)).toBe('2002:5db8:d822::1');
    // NAT64: the IPv4 address inside is what the guard judged, and what opening it lets through.
    expect(refusedAddress(closed.refusal('64:ff9b::a00:1')!)).toBe('10.0.0.1');
    expect(new NetworkGuard([refusedAddress(closed.refusal('64:ff9b::a00:1')!)!]).refusal('64:ff9b::a00:1')).toBeUndefined();
    // Refusals that no address opens: a proxy's, a URL's own.
    expect(refusedAddress('the proxy http://p:3128 refused a tunnel to 203.0.113.7:80 (403 Forbidden)')).toBeUndefined();
    expect(refusedAddress('not an IP address: x')).toBeUndefined();
  });
  it('rejects a malformed allow-list entry with a clear message', () => {
    expect(() => new NetworkGuard(['10.0.0.0/99'])).toThrow(/not a valid CIDR/);
    expect(() => new NetworkGuard(['bad host!'])).toThrow(/neither a CIDR/);
    // Taken as host names they opened nothing: a URL parser reads such a host as an IPv4 address.
    for (const typo of ['999.1.1.1', '127.0.0.256', '10.0.0.1.5', 'intranet.0x7f', 'ham.42']) {
      expect(() => new NetworkGuard([typo])).toThrow(`allow-network entry "${typo}" is not a valid IP address`);
    }
    // Names that merely hold digits are names.
    expect(new NetworkGuard(['img2.example', 'a-1.b-2']).refusal('10.0.0.1', 'img2.example')).toBeUndefined();
  });
});
