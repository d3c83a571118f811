import { againKind } from './askAgain';
import { refusedAddress } from '../pipeline/networkGuard';
import { notDoneRecords } from './recordLines';

/**
 * Why URLs did not end as `done`, by source: the few commonest reasons, read from the metadata
 * records as `crawl run` exports them, so that a run ends by saying why (a dead host, a site's
 * 404s, robots.txt) instead of leaving the operator to dig through metadata.ndjson.
 */

/** Distinct reasons remembered per source; the rest share the OTHER entry (bounded memory). */
const MAX_REASONS = 100;
const OTHER = ''; // no real key is empty: each starts with its outcome

export class FailureTally {
  private readonly bySource = new Map<string, Map<string, number>>();
  /** Records of a wall's answers and of failures (see askAgain), which `crawl again` asks for again. */
  readonly again = { walled: 0, failed: 0 };
  /** Of the failures, URLs the network guard refused, by the address it refused (bounded as reasons are). */
  readonly guardRefused = { urls: 0, byAddress: new Map<string, number>() };
  /** Records not done of sources outside `only`, left out of everything above. */
  otherSources = 0;

  /**
   * `only`: the sources to tally (a run's own), when the store holds other crawls' records too: a
   * run over an output directory shared with another ended by listing that one's failures as its own.
   */
  constructor(readonly only?: ReadonlySet<string>) {}

  /** One exported unit: NDJSON records. Lines that are not records are skipped. */
  addText(text: string): void {
    for (const r of notDoneRecords(text)) {
      if (this.only && !this.only.has(r.source)) {
        this.otherSources++;
        continue;
      }
      const kind = againKind(r);
      if (kind) this.again[kind]++;
      const address = r.outcome === 'refused' && typeof r.reason === 'string' ? refusedAddress(r.reason) : undefined;
      if (address) this.addGuardRefusal(address);
      this.add(r.source, `${r.outcome}: ${typeof r.reason === 'string' && r.reason ? normalise(r.reason) : 'no reason given'}`);
    }
  }

  private addGuardRefusal(address: string): void {
    this.guardRefused.urls++;
    const byAddress = this.guardRefused.byAddress;
    if (byAddress.has(address) || byAddress.size < MAX_REASONS) byAddress.set(address, (byAddress.get(address) ?? 0) + 1);
  }

  private add(source: string, key: string): void {
    let reasons = this.bySource.get(source);
    if (!reasons) this.bySource.set(source, (reasons = new Map()));
    const k = reasons.has(key) || reasons.size < MAX_REASONS ? key : OTHER;
    reasons.set(k, (reasons.get(k) ?? 0) + 1);
  }

  /** One line per source with URLs not done: its `top` commonest reasons with their counts. */
  lines(top = 3): string[] {
    return [...this.bySource.keys()].sort().map((source) => {
      const counts = this.bySource.get(source)!;
      const reasons = [...counts].filter(([k]) => k !== OTHER).sort((a, b) => b[1] - a[1] || rank(a[0]) - rank(b[0]) || a[0].localeCompare(b[0]));
      const shown = reasons.slice(0, top).map(([reason, n]) => `${n} ${reason}`);
      const rest = reasons.slice(top).reduce((s, [, n]) => s + n, counts.get(OTHER) ?? 0);
      return `${source}: ${shown.join(' · ')}${rest ? ` · ${rest} more with other reasons` : ''}`;
    });
  }
}

/**
 * Among reasons as common as each other, the site's failures first: they are what `crawl again
 * --failed` asks for again and what the breaker counts, where a page or a 404 is the URL's own.
 */
const OUTCOME_ORDER = ['error', 'refused', 'content', 'linkrot', 'robots'];

function rank(key: string): number {
  const i = OUTCOME_ORDER.indexOf(key.slice(0, key.indexOf(':')));
  return i < 0 ? OUTCOME_ORDER.length : i;
}

/** Reasons that name the URL's own path or size are grouped without it. */
function normalise(reason: string): string {
  return reason
    .replace(/^robots\.txt disallows \S.*$/, 'disallowed by robots.txt')
    .replace(/\b\d+x\d+ pixels\b/, 'WxH pixels')
    .replace(/; \d+( of \d+)? bytes of the body received$/, (_m, of: string | undefined) => `; N${of ? ' of M' : ''} bytes of the body received`)
    .slice(0, 200);
}
