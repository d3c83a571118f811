import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Refuses loopback, private, link-local, multicast and reserved addresses unless an explicit
 * allow-list opens them. Checked on the resolved IP of every connection, so neither a DNS
 * answer nor a redirect can steer us into an internal network.
 */

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

/** How each refusal of an address ends (see refusedAddress, and GuardedHosts, which leaves it out). */
export const NOT_ALLOWED = 'not allowed (use --allow-network to open it)';
const REFUSED_ADDRESS = /\baddress (\S+) is [a-zA-Z0-9]+; not allowed \(use --allow-network to open it\)/g;

/**
 * The address a refusal's reason (as NetworkGuard.refusal words it) names as the one to open,
 * so that the end of a crawl can give the `--allow-network` that would let its URLs through:
 * for NAT64, the IPv4 address inside it, which is what the guard judged.
 */
export function refusedAddress(reason: string): string | undefined {
  const found = [...reason.matchAll(REFUSED_ADDRESS)];
  return found.length ? found[found.length - 1]![1] : undefined;
}

export class NetworkGuard {
  private readonly cidrs: [Addr, number][] = [];
  private readonly hosts = new Set<string>();

  constructor(allow: readonly string[]) {
    for (const entry of allow) {
      if (entry.includes('/')) {
        try {
          this.cidrs.push(ipaddr.parseCIDR(entry));
        } catch {
          throw new Error(`allow-network entry ${JSON.stringify(entry)} is not a valid CIDR range`);
        }
      } else if (ipaddr.isValid(entry)) {
        const a = ipaddr.parse(entry);
        this.cidrs.push([a, a.kind() === 'ipv4' ? 32 : 128]);
      } else if (/^[0-9.]+$/.test(entry) || /^[a-z0-9.-]*\.(0x[0-9a-f]*|[0-9]+)$/i.test(entry)) {
        // A name ending in a number is read as an IPv4 address by URL parsers, so as a host name
        // it could never match, and `999.1.1.1` would open nothing while the crawl went on.
        throw new Error(`allow-network entry ${JSON.stringify(entry)} is not a valid IP address (four numbers 0-255, such as 127.0.0.1)`);
      } else if (/^[a-z0-9.-]+$/i.test(entry)) {
        this.hosts.add(entry.toLowerCase());
      } else {
        throw new Error(`allow-network entry ${JSON.stringify(entry)} is neither a CIDR range, an IP nor a host name`);
      }
    }
  }

  /** Whether `host` is an IP address (IPv4 or IPv6, without brackets) rather than a name. */
  static isAddress(host: string): boolean {
    return ipaddr.isValid(host);
  }

  /** Undefined when the address may be reached, else the reason it may not. */
  refusal(ip: string, host?: string): string | undefined {
    if (host && this.hosts.has(host.toLowerCase())) return undefined;
    if (!ipaddr.isValid(ip)) return `not an IP address: ${ip}`;
    let addr: Addr = ipaddr.parse(ip);
    if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) addr = (addr as ipaddr.IPv6).toIPv4Address();
    for (const [net, bits] of this.cidrs) {
      if (net.kind() === addr.kind() && addr.match(net, bits)) return undefined;
    }
    const translated = addr.kind() === 'ipv6' ? nat64Target(addr as ipaddr.IPv6) : undefined;
    if (translated) {
      // On an IPv6-only network with DNS64 every IPv4-only site resolves into this prefix: refusing
      // the prefix would refuse them all, and opening it would open 64:ff9b::10.0.0.1 as well. The
      // translator delivers to the embedded IPv4 address, so that address is what gets judged.
      const inner = this.refusal(translated.toString(), host);
      return inner && `address ${ip} is NAT64 for ${translated.toString()}: ${inner}`;
    }
    const range = addr.range();
    return range === 'unicast' ? undefined : `address ${ip} is ${range}; ${NOT_ALLOWED}`;
  }

  /** A dns.lookup replacement for undici's connector that refuses forbidden answers. */
  lookup: net.LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return (callback as (e: Error | null) => void)(err);
      const list = addresses as dns.LookupAddress[];
      const allowed = list.filter((a) => this.refusal(a.address, hostname) === undefined);
      if (allowed.length === 0) {
        const reason = this.refusal(list[0]?.address ?? '', hostname) ?? 'no address';
        return (callback as (e: Error | null) => void)(Object.assign(new Error(`refused ${hostname}: ${reason}`), { code: 'ENETGUARD' }));
      }
      if ((options as dns.LookupOptions).all) return (callback as (e: null, a: dns.LookupAddress[]) => void)(null, allowed);
      return (callback as (e: null, a: string, f: number) => void)(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

/**
 * The IPv4 address inside the NAT64 well-known prefix (RFC 6052), the only translation prefix
 * whose layout is fixed. Network-specific prefixes, 6to4 and Teredo stay refused unless allowed.
 */
function nat64Target(addr: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  if (!addr.match(NAT64_WELL_KNOWN)) return undefined;
  const b = addr.toByteArray();
  return new ipaddr.IPv4(b.slice(12, 16));
}
