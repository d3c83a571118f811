import dns from 'node:dns';
import { NetworkGuard, NOT_ALLOWED } from '../pipeline/networkGuard';
import { forEachLimit, fulfilsWithin } from '../shared/concurrency';
import { shellWord } from '../shared/shellWord';
import { checkAdvice } from './guardedHosts';

/** Host names looked up, those with the most URLs first: a million-host manifest stays bounded. */
export const LOOKED_UP = 1_000;
/** Hosts named in a warning; the rest are counted. */
const SHOWN = 5;

export type Lookup = (host: string) => Promise<string[]>;

/** The system resolver, as the fetch uses it (all addresses, in the resolver's order). */
export const systemLookup: Lookup = async (host) => (await dns.promises.lookup(host, { all: true, verbatim: true })).map((a) => a.address);

interface NameFound {
  host: string;
  urls: number;
}

export interface HostLookupReport {
  /** Names looked up, and URLs on names left out past LOOKED_UP. */
  looked: number;
  urlsNotLooked: number;
  /** Names without an address here: each of their URLs ends as an error after robots.txt's tries. */
  unresolved: (NameFound & { error: string })[];
  /** Names all of whose addresses the guard refuses: each of their URLs ends refused. */
  refused: (NameFound & { reason: string })[];
  /**
   * Addresses that the names of several sources resolve to, those of the most sources first:
   * each source keeps to its own rate, so one server behind such an address gets their sum.
   */
  sharedAddresses: SharedAddress[];
}

export interface SharedAddress {
  address: string;
  /** The sources, each with the first of its names (in order) that resolves there. */
  sources: { source: string; host: string }[];
}

/**
 * The host names of a manifest, for `crawl check --resolve`: what the guard and DNS will say of
 * them before a crawl asks. IP literals and `localhost` are GuardedHosts' (no lookup needed);
 * a name that does not resolve ended its source's URLs after a minute of robots.txt tries, and
 * an intranet name was found refused only in the run's summary.
 */
export class HostNames {
  private readonly names = new Map<string, number>();
  /** A name's source (a URL's origin unless its line names one): the first one given. */
  private readonly sources = new Map<string, string>();
  private urlsNotKept = 0;

  /**
   * A URL kept (not a repeat) on `origin`, the host with any port as the manifest reader gives
   * it, of `source` (its origin when not given).
   */
  add(origin: string, source = origin): void {
    if (origin.charCodeAt(0) === 91 /* [ */) return;
    const colon = origin.lastIndexOf(':');
    const host = colon >= 0 ? origin.slice(0, colon) : origin;
    const known = this.names.get(host);
    if (known !== undefined) {
      this.names.set(host, known + 1);
      return;
    }
    if (host === 'localhost') return;
    // An IPv4 literal starts with a digit: names that do not are told by one comparison.
    const first = host.charCodeAt(0);
    if (first >= 48 && first <= 57 && NetworkGuard.isAddress(host)) return;
    // Up to ten times the names looked up are counted, so that the most-used are the ones asked.
    if (this.names.size < LOOKED_UP * 10) {
      this.names.set(host, 1);
      this.sources.set(host, source);
    } else this.urlsNotKept++;
  }

  /** Looks up the names with the most URLs, `concurrency` at a time, each given up after `timeoutMs`. */
  async resolve(guard: NetworkGuard, lookup: Lookup = systemLookup, opts: { concurrency?: number; timeoutMs?: number } = {}): Promise<HostLookupReport> {
    const sorted = [...this.names].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
    const asked = sorted.slice(0, LOOKED_UP);
    const report: HostLookupReport = {
      looked: asked.length, urlsNotLooked: this.urlsNotKept + sorted.slice(LOOKED_UP).reduce((n, [, urls]) => n + urls, 0), unresolved: [], refused: [], sharedAddresses: [],
    };
    /** Address -> source -> the first of its names found there. */
    const served = new Map<string, Map<string, string>>();
    const timeoutMs = opts.timeoutMs ?? 5_000;
    await forEachLimit(asked, opts.concurrency ?? 16, async ([host, urls]) => {
      let addresses: string[];
      try {
        const answer = lookup(host);
        if (!(await fulfilsWithin(answer, timeoutMs))) {
          answer.catch(() => undefined);
          report.unresolved.push({ host, urls, error: 'no answer from the resolver in time' });
          return;
        }
        addresses = await answer;
      } catch (err) {
        report.unresolved.push({ host, urls, error: lookupError(err) });
        return;
      }
      // The fetch connects to one of them; only when every one is refused is the URL's end sure.
      const reasons = addresses.map((a) => guard.refusal(a, host));
      if (addresses.length && reasons.every((r) => r !== undefined)) {
        report.refused.push({ host, urls, reason: reasons[0]!.replace(`; ${NOT_ALLOWED}`, '') });
        return;
      }
      const source = this.sources.get(host)!;
      for (const address of new Set(addresses)) {
        const sources = served.get(address) ?? served.set(address, new Map()).get(address)!;
        // The first name in order, whichever look-up ends first.
        const shown = sources.get(source);
        if (shown === undefined || host < shown) sources.set(source, host);
      }
    });
    report.sharedAddresses = sharedAddresses(served);
    const order = (a: NameFound, b: NameFound) => b.urls - a.urls || a.host.localeCompare(b.host);
    report.unresolved.sort(order);
    report.refused.sort(order);
    return report;
  }
}

/**
 * The addresses that serve several sources, one for each server: a site's IPv4 and IPv6
 * addresses, or the several of a round-robin name, are one server to warn of, and an address
 * whose sources another shown address serves all of is left out. Those of the most sources
 * first; the order of the look-ups does not show (they end in any order).
 */
function sharedAddresses(served: ReadonlyMap<string, ReadonlyMap<string, string>>): SharedAddress[] {
  const candidates = [...served]
    .filter(([, sources]) => sources.size >= 2)
    .sort((a, b) => b[1].size - a[1].size || a[0].localeCompare(b[0]));
  const kept: [string, ReadonlyMap<string, string>][] = [];
  for (const [address, sources] of candidates) {
    if (kept.some(([, k]) => [...sources.keys()].every((s) => k.has(s)))) continue;
    kept.push([address, sources]);
  }
  return kept.map(([address, sources]) => ({ address, sources: [...sources].map(([source, host]) => ({ source, host })).sort((a, b) => a.source.localeCompare(b.source)) }));
}

/**
 * The warnings a report gives, for `crawl check`: none when every name looked up is reachable
 * and no two sources share an address. `rateOf`: a source's rate, for the sum a shared server gets.
 */
export function hostLookupWarnings(report: HostLookupReport, rateOf?: (source: string) => number | undefined): string[] {
  const out: string[] = [];
  const named = <T extends NameFound>(list: T[], detail: (h: T) => string) => {
    const shown = list.slice(0, SHOWN).map((h) => `${h.host} (${h.urls} URL(s): ${detail(h)})`);
    const rest = list.slice(SHOWN);
    const restUrls = rest.reduce((n, h) => n + h.urls, 0);
    return `${shown.join(', ')}${rest.length ? ` and ${rest.length} more host(s) with ${restUrls} URL(s)` : ''}`;
  };
  const total = (list: NameFound[]) => list.reduce((n, h) => n + h.urls, 0);
  if (report.unresolved.length) {
    // Every name failing says more of this machine than of the manifest.
    const why = report.unresolved.length === report.looked && report.looked > 1
      ? `none of the ${report.looked} names looked up resolves: does this machine reach a DNS server (the workers' may)?`
      : 'a typo in the manifest, or a lapsed domain?';
    out.push(`${total(report.unresolved)} URL(s) are on host names that do not resolve here: ${named(report.unresolved, (h) => h.error)}. ` +
      `Each would end as an error once robots.txt has been tried (about a minute for a name DNS says does not exist): ${why}`);
  }
  if (report.refused.length) {
    const open = report.refused.slice(0, SHOWN).map((h) => `--allow-network ${shellWord(h.host)}`).join(' ');
    out.push(`${total(report.refused)} URL(s) are on host names that resolve only to addresses the network guard refuses, and would be recorded as refused: ` +
      `${named(report.refused, (h) => h.reason)}. ${checkAdvice(open)}`);
  }
  if (report.sharedAddresses.length) {
    const shown = report.sharedAddresses.slice(0, SHOWN).map((a) => {
      const names = a.sources.slice(0, SHOWN).map((s) => (s.source === s.host || s.source.startsWith(`${s.host}:`) ? s.source : `${JSON.stringify(s.source)} (${s.host})`));
      const rates = a.sources.map((s) => rateOf?.(s.source));
      const sum = rates.every((r) => r !== undefined) ? `, ${Number(rates.reduce((n, r) => n + r!, 0).toPrecision(3))}/s in all` : '';
      return `${a.address}: ${a.sources.length} sources${sum} (${names.join(', ')}${a.sources.length > SHOWN ? `, and ${a.sources.length - SHOWN} more` : ''})`;
    });
    const more = report.sharedAddresses.length > SHOWN ? `; and ${report.sharedAddresses.length - SHOWN} more address(es)` : '';
    out.push(`host names of several sources resolve to one address: ${shown.join('; ')}${more}. Each source keeps to its own rate, so where such an address is one server ` +
      '(shared hosting, not a CDN\'s), it gets their sum: give their URLs one "source" to hold it to one rate, or lower their rates in the catalogue');
  }
  if (report.urlsNotLooked) out.push(`${report.urlsNotLooked} URL(s) on host names past the ${report.looked} with the most URLs were not looked up`);
  return out;
}

function lookupError(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  if (code === 'ENOTFOUND') return 'no such host (ENOTFOUND)';
  if (typeof code === 'string') return `lookup failed (${code})`;
  return err instanceof Error ? err.message : String(err);
}
