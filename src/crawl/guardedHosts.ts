import { NetworkGuard, NOT_ALLOWED, refusedAddress } from '../pipeline/networkGuard';
import { shellWord } from '../shared/shellWord';

/** Hosts named in the warning; the rest are counted. */
const SHOWN = 5;
/** Hosts remembered with their counts: a manifest of millions of private IPs stays bounded. */
const KEPT = 1_000;

/**
 * URLs whose host is an address the network guard refuses (an IP literal or `localhost`), found
 * while a manifest is read, before anything is fetched. Each such URL ends as a `refused` record
 * and nothing else: a crawl of an intranet's URLs without --allow-network was told so only
 * by the summary at its end. Host names are not resolved here (a lookup per host of a
 * million-host manifest); the guard judges them as they are fetched.
 */
export class GuardedHosts {
  private readonly hosts = new Map<string, { urls: number; reason: string }>();
  private urls = 0;

  constructor(private readonly guard: NetworkGuard) {}

  /** A URL kept (not a repeat) on `origin`, the host with any port as the manifest reader gives it. */
  add(origin: string): void {
    if (!isLiteral(origin)) return;
    const known = this.hosts.get(origin);
    if (known) {
      known.urls++;
      this.urls++;
      return;
    }
    const reason = this.refusal(origin);
    if (reason === undefined) return;
    this.urls++;
    if (this.hosts.size < KEPT) this.hosts.set(origin, { urls: 1, reason });
  }

  /** A URL added before that the crawl leaves out after all (downloaded before, or in a chunk an earlier start crawled): no one asks for it. */
  forget(origin: string): void {
    const known = this.hosts.get(origin);
    if (known) {
      this.urls--;
      if (--known.urls === 0) this.hosts.delete(origin);
      return;
    }
    // A host past the KEPT ones is in the count alone.
    if (this.urls > 0 && isLiteral(origin) && this.refusal(origin) !== undefined) this.urls--;
  }

  /** forget() of a URL as the manifest reader gives it (no credentials, a path after the host): its host need not be carried beside it. */
  forgetUrl(href: string): void {
    const start = href.indexOf('://') + 3;
    const end = href.indexOf('/', start);
    this.forget(href.slice(start, end < 0 ? undefined : end));
  }

  /**
   * The warning, if any URL is on a refused address: for `crawl run` into the output directory
   * `run` (its own worker's guard, opened by its --allow-network) or `crawl check` (saying what
   * run and workers need).
   */
  warning(command: { run: string } | 'check' | 'start'): string | undefined {
    if (this.urls === 0) return undefined;
    const hosts = [...this.hosts].sort((a, b) => b[1].urls - a[1].urls || a[0].localeCompare(b[0]));
    const shown = hosts.slice(0, SHOWN);
    const listed = shown.map(([origin, h]) => `${origin} (${h.urls} URL(s): ${h.reason.replace(`; ${NOT_ALLOWED}`, '')})`);
    const rest = this.urls - shown.reduce((n, [, h]) => n + h.urls, 0);
    // localhost by name: it may resolve to ::1 as well as 127.0.0.1, and no DNS answer moves it.
    const addresses = [...new Set(shown.map(([origin, h]) => (isLocalhost(origin) ? 'localhost' : refusedAddress(h.reason))).filter((a) => a !== undefined))];
    const open = addresses.map((a) => `--allow-network ${shellWord(a)}`).join(' ');
    const others = rest ? ', with an --allow-network for each of the other addresses too' : '';
    const hostsText = `${listed.join(', ')}${rest ? ` and ${rest} more URL(s) on other such hosts` : ''}`;
    // The workers' guard is theirs: `start` cannot tell whether they were given these.
    if (command === 'start') {
      return `${this.urls} URL(s) are on addresses the network guard refuses unless it is opened for them: ${hostsText}. ` +
        `Workers crawl them only if started with ${open}${others} (or CRAWL_ALLOW_NETWORKS; hosts you trust only): a worker started without it records each as refused, without asking for it`;
    }
    return `${this.urls} URL(s) are on addresses the network guard refuses, and would be recorded as refused without being asked for: ${hostsText}. ` +
      // Once refused, a URL's record is its answer and the same run again skips it: `again --failed` asks.
      (command !== 'check' ? `To crawl them (hosts you trust only), once this run ends: \`crawl again --failed ${open} --out ${shellWord(command.run)}\`${others}`
        : checkAdvice(`${open}${others}`));
  }

  private refusal(origin: string): string | undefined {
    if (isLocalhost(origin)) return this.guard.refusal('127.0.0.1', 'localhost');
    let host: string;
    try {
      host = new URL(`http://${origin}/`).hostname;
    } catch {
      return undefined;
    }
    if (host.startsWith('[')) host = host.slice(1, -1);
    return NetworkGuard.isAddress(host) ? this.guard.refusal(host) : undefined;
  }
}

/** What `crawl check` says opens refused URLs: the options for `run`, and the workers' part for `start`. */
export function checkAdvice(options: string): string {
  return `\`crawl run\` crawls them given ${options} (hosts you trust only); \`crawl start\`, only if its workers were started with the same options`;
}

/** An IP literal or `localhost`. Most hosts are names: one comparison, not a parse, per URL of a large manifest. */
function isLiteral(origin: string): boolean {
  const first = origin.charCodeAt(0);
  return (first >= 48 && first <= 57) || first === 91 /* [ */ || isLocalhost(origin);
}

/** `localhost` (with any port): what it resolves to is loopback on any machine; other names are left to the fetch. */
function isLocalhost(origin: string): boolean {
  return origin === 'localhost' || origin.startsWith('localhost:');
}
