import robotsParser from 'robots-parser';
import { parseRetryAfter } from '../politeness/retryAfter';
import { isThrottle } from '../politeness/classify';
import type { SiteQuota } from '../politeness/rateLimitHeaders';
import { setBounded } from '../shared/boundedMap';
import { log } from '../shared/log';
import type { RedirectHop } from '../shared/types';
import { absorbSetCookies, cookieHeader } from './chainCookies';
import type { PipelineConfig } from './config';
import type { Fetcher, FetchResult } from './fetcher';
import { robotsAgentsAsTokens, robotsMatchUrl, robotsRulesDecoded } from './robotsEncoding';
import { type RobotsShelf, type SharedSiteFile, siteInTrouble, spreadTtlMs } from './siteFileShelf';

/**
 * robots.txt per origin with RFC 9309 semantics: 2xx is parsed (its first 512 KiB); 4xx but
 * 429 means no restrictions; 429, 5xx or unreachable means "disallow everything for now" and is
 * asked again after a short interval. Cached at most 24 h. The fetch goes through the same guarded fetcher.
 */

export type RobotsVerdict =
  | { kind: 'allowed' }
  | { kind: 'disallowed'; reason: string }
  /**
   * robots.txt could not be read (5xx, 429, unreachable): nothing may be fetched from the origin
   * until it is asked again at `retryAtMs`. `giveUp`: it has failed `robotsMaxTries` times in
   * a row, each time after waiting out the interval, and the URLs waiting for it fail now.
   * `tries`: how many times in a row it has failed so far.
   */
  | { kind: 'unavailable'; reason: string; retryAtMs: number; giveUp: boolean; tries: number }
  /** The origin's address is refused by the network guard: so is every URL on it. */
  | { kind: 'refused'; reason: string }
  /** Not known yet: fetching robots.txt used this request slot. */
  | { kind: 'pending' };

interface Entry {
  expiresAt: number;
  check(url: string): RobotsVerdict;
  /** The file's Crawl-delay for our agent, ms (see crawlDelayMs). */
  crawlDelayMs?: number;
}

/** Longer Crawl-delays are read as this: one request a minute is as slow as a crawl can usefully go. */
export const MAX_CRAWL_DELAY_MS = 60_000;

const ROBOTS_MAX_BYTES = 512 * 1024; // RFC 9309: parse at least 500 KiB
/**
 * Origins remembered at most (robots.txt files and failure counts). A worker that runs for weeks
 * meets millions of origins; past this many, expired entries go first, then the least recently
 * fetched (asked again when next needed: RFC 9309 sets how long a file may be kept, not how long
 * it must be).
 */
export const ROBOTS_MAX_ORIGINS = 10_000;
/** The longest Retry-After of an unreadable robots.txt honoured before it is asked again (the default cap of image requests'). */
const MAX_ROBOTS_RETRY_AFTER_MS = 15 * 60_000;
/**
 * How soon a host that DNS says does not exist is asked again (at most robotsRetryMs): with the
 * default three tries its URLs end after about a minute instead of ten. The tries still ride out
 * a resolver's brief mistake; a name that is gone for longer needs an operator (`crawl again
 * --failed`), not a longer wait.
 */
export const NO_SUCH_HOST_RETRY_MS = 30_000;
/**
 * An origin whose file the store did not have is not looked for there again sooner than this:
 * each URL of a new origin checks, and the first one's slot fetches it from the site meanwhile.
 * A read of robots.txt that failed is followed by a look in the store when it is due again.
 */
const SHELF_REREAD_MS = 30_000;
/**
 * Workers holding a kept failed read of robots.txt ask again up to this much after it is due
 * (from half of it, at random; at most a tenth of robotsRetryMs): see fromKeptTrouble. A source's
 * monitor holds it until the latest time its workers report, so this also delays the source.
 */
const TROUBLE_SPREAD_MS = 10_000;
/** RFC 9309: follow at least five consecutive redirects; past that, robots.txt is unavailable. */
const ROBOTS_MAX_REDIRECTS = 5;

/**
 * robots-parser matches a rule in about (the rule's characters from its first `*` on) x (the
 * URL's path and query) steps: a 500 KiB file of wildcard rules took 2.2 s for one URL of
 * 1,500 characters, on the thread that paces every source's requests. Past this many steps
 * (~20 ms) a URL counts as disallowed, which asks nothing of the site; an ordinary file with
 * a few hundred wildcard rules stays far below it.
 */
export const MAX_ROBOTS_MATCH_STEPS = 5_000_000;
/**
 * Verdicts that cost more match steps than this are remembered (up to ROBOTS_MEMO_URLS per
 * origin): a URL is checked up to three times before its request (twice as the paced runner
 * looks ahead, once as it is processed), so a file just under the bound cost ~60 ms a URL.
 */
const ROBOTS_MEMO_STEPS = 100_000;
const ROBOTS_MEMO_URLS = 256;

/** The wildcard characters of the rules robots-parser applies to `agent` (its group, else `*`). */
function wildcardChars(robot: unknown, agent: string): number {
  // robots-parser 3.0.1 (pinned) keeps its rules by lower-cased product token; it has no public
  // accessor. Without them (a later version) this is 0 and every URL is matched as before.
  const rules = (robot as { _rules?: Record<string, { pattern?: unknown }[] | undefined> })._rules;
  const group = rules?.[agent.toLowerCase().split('/')[0]!.trim()] ?? rules?.['*'] ?? [];
  let chars = 0;
  for (const r of group) {
    const star = typeof r.pattern === 'string' ? r.pattern.indexOf('*') : -1;
    if (star >= 0) chars += (r.pattern as string).length - star;
  }
  return chars;
}

export class RobotsCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<Entry | 'late' | 'redirected' | 'shared'>>();
  /** Origin -> the last look for its file in the store (see RobotsShelf): when, and whether it found one once it has. */
  private readonly shelfReads = new Map<string, { atMs: number; found: boolean | undefined; read: Promise<boolean> }>();
  /**
   * Origin -> where its robots.txt redirected to: each hop is a request of its own and takes a
   * slot of its own, like an image's (an http -> https redirect made robots.txt two requests in
   * one slot).
   */
  private readonly hops = new Map<string, RedirectHop>();
  /** Origin -> reads of its robots.txt that failed in a row (cleared by any answer that is not a failure). */
  private readonly failures = new Map<string, number>();
  /** Origin -> when the failed read this worker kept in the store is due: the store's entry is its own while it says that. */
  private readonly keptTrouble = new Map<string, number>();

  /** `shelf`: where the workers of a crawl keep the files they read (see RobotsShelf). */
  constructor(private readonly fetcher: Fetcher, private readonly cfg: PipelineConfig, private readonly now: () => number = Date.now, private readonly maxOrigins = ROBOTS_MAX_ORIGINS, private readonly shelf?: RobotsShelf) {}

  /**
   * Starts looking for the origin's file in the store ahead of the slot that would fetch it
   * from the site, so that the slot can go to an image instead (and a Crawl-delay in it is
   * known before the first request).
   */
  warm(origin: string): void {
    if (this.shelf && !this.fresh(origin) && !this.inflight.has(origin)) void this.fromShelf(origin);
  }

  /** Store writes under way have finished (tests wait for them before a second worker looks). */
  async settled(): Promise<void> {
    await this.shelf?.settled();
  }

  /** Whether the store had a fresh file for the origin; it is remembered if so. */
  private fromShelf(origin: string): Promise<boolean> {
    if (!this.shelf) return Promise.resolve(false);
    const now = this.now();
    const last = this.shelfReads.get(origin);
    // A look under way is joined; a miss holds for a while. A find is not reused: its entry
    // may have expired since (this is only asked when there is no fresh one).
    if (last && (last.found === undefined || (!last.found && now - last.atMs < SHELF_REREAD_MS))) return last.read;
    const look = { atMs: now, found: undefined as boolean | undefined, read: Promise.resolve(false) };
    const ttlMs = spreadTtlMs(this.cfg.robotsTtlMs);
    look.read = this.shelf.read(origin, now, ttlMs).then((kept) => {
      if (kept?.unreadable) {
        const holds = this.fromKeptTrouble(origin, kept.unreadable);
        // Due: the slot that asks the site looks again first, in case another worker just has.
        if (!holds && this.shelfReads.get(origin) === look) this.shelfReads.delete(origin);
        return (look.found = holds);
      }
      if (kept && !this.fresh(origin)) {
        this.hops.delete(origin);
        this.failures.delete(origin);
        this.remember(origin, this.fromKept(origin, kept, ttlMs));
      }
      return (look.found = kept !== undefined);
    }).catch(() => (look.found = false));
    setBounded(this.shelfReads, origin, look, this.maxOrigins);
    return look.read;
  }

  private fromKept(origin: string, kept: SharedSiteFile, ttlMs: number): Entry {
    if (kept.rules !== undefined) return this.parsed(`${origin}/robots.txt`, kept.rules, kept.fetchedAtMs, ttlMs);
    return { expiresAt: kept.fetchedAtMs + ttlMs, check: () => ({ kind: 'allowed' }) };
  }

  /**
   * A failed read of the origin's robots.txt, kept by another worker or by this one. Until it is
   * due the URLs wait here too, without a request; then the read goes on from its count of
   * tries. The worker that kept it asks when it says; the others take it as due a random
   * 50-100% of TROUBLE_SPREAD_MS later (the monitors grant every worker at that moment), and read
   * the answer the first one kept. True when it holds the origin now.
   */
  private fromKeptTrouble(origin: string, kept: { reason: string; tries: number; retryAtMs: number }): boolean {
    if (this.fresh(origin)) return false;
    const now = this.now();
    const retryMs = this.cfg.robotsRetryMs;
    // Tries in a row: a read due long ago (an earlier crawl, a site that has had time to
    // recover) starts a new count. So does a give-up found by a worker that was not waiting for
    // that try (an operator's `crawl again --failed` right after, a later chunk): it asks, as a
    // worker of its own did before the failures were kept.
    if (kept.retryAtMs + retryMs < now) return false;
    if (kept.tries >= this.cfg.robotsMaxTries && !this.failures.has(origin)) return false;
    const tries = Math.max(kept.tries, this.failures.get(origin) ?? 0);
    setBounded(this.failures, origin, tries, this.maxOrigins);
    const spreadMs = Math.min(TROUBLE_SPREAD_MS, retryMs / 10);
    // A damaged or hostile entry does not hold an origin for longer than a read of our own would.
    const ours = this.keptTrouble.get(origin) === kept.retryAtMs;
    const dueMs = Math.min(kept.retryAtMs, now + Math.max(retryMs, MAX_ROBOTS_RETRY_AFTER_MS)) + (ours ? 0 : Math.round(spreadMs * (0.5 + Math.random() / 2)));
    if (dueMs <= now) return false;
    const giveUp = tries >= this.cfg.robotsMaxTries;
    log.info({ event: 'robots-unavailable', origin, reason: kept.reason, try: tries, of: this.cfg.robotsMaxTries, readFromStore: true, ...(giveUp ? {} : { askedAgainAt: new Date(dueMs).toISOString() }) },
      giveUp ? 'robots.txt unreadable (the workers gave up on it): its URLs fail' : 'robots.txt unreadable (read from the store): its URLs wait until it is asked again');
    this.hops.delete(origin);
    this.remember(origin, unavailable(kept.reason, tries, giveUp, dueMs, retryMs));
    return true;
  }

  private keep(origin: string, kept: SharedSiteFile): void {
    if (!this.shelf) return;
    // The look before the fetch found nothing; what is in the store now is this file.
    this.shelfReads.delete(origin);
    this.shelf.write(origin, kept);
  }

  /** The origin's robots.txt while its cache entry lasts. */
  private fresh(origin: string): Entry | undefined {
    const e = this.entries.get(origin);
    return e && e.expiresAt > this.now() ? e : undefined;
  }

  /** Where the next request for this origin's robots.txt goes, when that is a redirect's target. */
  pendingHop(origin: string): string | undefined {
    return this.hops.get(origin)?.url;
  }

  /**
   * The Crawl-delay robots.txt asks of our agent on this URL's origin, when known. Not part of
   * RFC 9309, but a site that writes one has said how often it can bear a request.
   */
  crawlDelayMs(url: URL): number | undefined {
    return this.fresh(url.origin)?.crawlDelayMs;
  }

  /** The verdict for a URL when its origin's robots.txt is cached, else undefined (no request is made). */
  cachedVerdict(url: URL): RobotsVerdict | undefined {
    return this.fresh(url.origin)?.check(url.href);
  }

  /** Whether robots.txt for this URL's origin is already known (no request needed). */
  known(url: URL): boolean {
    return this.fresh(url.origin) !== undefined;
  }

  /**
   * The verdict for a URL. When robots.txt is not cached, fetches it (one request) and
   * returns its verdict; the caller decides whether the image request may follow in the same slot.
   */
  async check(url: URL, signal?: AbortSignal, sendBy?: number, mayGoLate?: () => boolean, onQuota?: (quota: SiteQuota) => void): Promise<{ verdict: RobotsVerdict; fetched: boolean; shared?: boolean }> {
    const origin = url.origin;
    const cached = this.fresh(origin);
    if (cached) return { verdict: cached.check(url.href), fetched: false };
    const running = this.inflight.get(origin);
    if (running) return { verdict: { kind: 'pending' }, fetched: false };
    const p = this.fromShelf(origin).then((found): Promise<Entry | 'late' | 'redirected' | 'shared'> | 'shared' => (found && this.fresh(origin) ? 'shared' : this.load(origin, signal, sendBy, mayGoLate, onQuota)));
    this.inflight.set(origin, p);
    try {
      const entry = await p;
      // Read from the store: no request was made, and the slot is still the URL's.
      if (entry === 'shared') {
        const kept = this.fresh(origin);
        return kept ? { verdict: kept.check(url.href), fetched: false, shared: true } : { verdict: { kind: 'pending' }, fetched: false };
      }
      // Not sent: it could not leave by its send-by time. Nothing is known; ask again later.
      if (entry === 'late') return { verdict: { kind: 'pending' }, fetched: false };
      // Redirected: the next hop goes in a later slot.
      if (entry === 'redirected') return { verdict: { kind: 'pending' }, fetched: true };
      this.remember(origin, entry);
      return { verdict: entry.check(url.href), fetched: true };
    } finally {
      this.inflight.delete(origin);
    }
  }

  /** Newest last (Map order), so that when the cache is full the oldest fetches go first. */
  private remember(origin: string, entry: Entry): void {
    this.entries.delete(origin);
    this.entries.set(origin, entry);
    if (this.entries.size <= this.maxOrigins) return;
    const now = this.now();
    for (const [o, e] of this.entries) if (e.expiresAt <= now) this.entries.delete(o);
    for (const o of this.entries.keys()) {
      if (this.entries.size <= this.maxOrigins) break;
      this.entries.delete(o);
    }
  }

  /** The entry for a robots.txt file of `robotsUrl` with these rules, read at `now` and good for `ttlMs`. */
  private parsed(robotsUrl: string, rules: string, now: number, ttlMs = this.cfg.robotsTtlMs): Entry {
    const robot = robotsParser(robotsUrl, robotsAgentsAsTokens(robotsRulesDecoded(rules)));
    const agent = this.cfg.robotsAgent;
    const delayS = robot.getCrawlDelay(agent);
    const wildcards = wildcardChars(robot, agent);
    const memo = new Map<string, RobotsVerdict>();
    const match = (u: string): RobotsVerdict => {
      // The whole URL is longer than its path: most URLs need no parsing to be under the bound.
      if (wildcards * u.length > MAX_ROBOTS_MATCH_STEPS) {
        const { pathname, search } = new URL(u);
        if (wildcards * (pathname.length + search.length) > MAX_ROBOTS_MATCH_STEPS) {
          return { kind: 'disallowed', reason: `robots.txt has too many wildcard rules (${wildcards} characters) to match a path of ${pathname.length + search.length} characters against` };
        }
      }
      return robot.isAllowed(robotsMatchUrl(u), agent) === false ? { kind: 'disallowed', reason: `robots.txt disallows ${new URL(u).pathname}` } : { kind: 'allowed' };
    };
    return {
      expiresAt: now + ttlMs,
      ...(delayS !== undefined && delayS > 0 ? { crawlDelayMs: Math.min(delayS * 1000, MAX_CRAWL_DELAY_MS) } : {}),
      check: (u) => {
        if (wildcards * u.length <= ROBOTS_MEMO_STEPS) return match(u);
        let verdict = memo.get(u);
        if (verdict) return verdict;
        verdict = match(u);
        setBounded(memo, u, verdict, ROBOTS_MEMO_URLS);
        return verdict;
      },
    };
  }

  /** `sendBy`: robots.txt takes an image's request slot, so it leaves by that slot's deadline or not at all. */
  private async load(origin: string, signal?: AbortSignal, sendBy?: number, mayGoLate?: () => boolean, onQuota?: (quota: SiteQuota) => void): Promise<Entry | 'late' | 'redirected'> {
    const robotsUrl = `${origin}/robots.txt`;
    const hop = this.hops.get(origin);
    const asked = new URL(hop?.url ?? robotsUrl);
    // A cookie wall in front of robots.txt too: its cookie goes on the next hop, as an image's does.
    const cookie = cookieHeader(hop?.cookies, asked);
    const res = await this.fetcher.fetch(asked.href, { signal, sendBy, mayGoLate, maxBytes: ROBOTS_MAX_BYTES, truncate: true, accept: 'text/plain,*/*;q=0.5', followRedirects: false, ...(cookie ? { cookie } : {}) });
    if (res.failure === 'late') return 'late';
    // A request like any other: its answer's rate-limit headers count as an image's do.
    if (res.quota) onQuota?.(res.quota);
    const redirects = (hop?.redirects ?? 0) + 1;
    if (res.location !== undefined && redirects <= ROBOTS_MAX_REDIRECTS) {
      const cookies = absorbSetCookies(hop?.cookies, res.setCookies ?? [], asked);
      setBounded(this.hops, origin, { url: res.location, redirects, ...(cookies ? { cookies } : {}) }, this.maxOrigins);
      return 'redirected';
    }
    this.hops.delete(origin);
    const now = this.now();
    if (res.ok && res.body) {
      this.failures.delete(origin);
      // A longer file is parsed up to its first 512 KiB (RFC 9309 asks for at least 500 KiB),
      // without the line the cut went through.
      const text = res.body.toString('utf8');
      const rules = res.truncated ? text.slice(0, text.lastIndexOf('\n') + 1) : text;
      // Redirected to another origin's own robots.txt (a site moved to https, or to www.): that
      // answer is that origin's file too, so its images do not ask for it again. Not with a
      // cookie sent, which a plain request would not carry.
      if (asked.origin !== origin && asked.pathname === '/robots.txt' && !asked.search && !cookie && !this.fresh(asked.origin)) {
        this.remember(asked.origin, this.parsed(`${asked.origin}/robots.txt`, rules, now));
        this.keep(asked.origin, { fetchedAtMs: now, status: res.status ?? 200, rules });
      }
      this.keep(origin, { fetchedAtMs: now, status: res.status ?? 200, rules });
      return this.parsed(robotsUrl, rules, now);
    }
    // 4xx: no robots.txt, no restrictions (RFC 9309), except 429 and 408: a site that asks us
    // to slow down, or that timed out waiting for the request, has not said it has no rules, so
    // it is treated as unavailable, as 5xx (a 408 allowed every URL for 24 h).
    if (res.status !== undefined && res.status >= 400 && res.status < 500 && !siteInTrouble(res.status)) {
      this.failures.delete(origin);
      this.keep(origin, { fetchedAtMs: now, status: res.status });
      return { expiresAt: now + this.cfg.robotsTtlMs, check: () => ({ kind: 'allowed' }) };
    }
    // The origin itself refused (not a redirect's target): so is every URL on it.
    if (res.failure === 'refused' && !hop) {
      this.failures.delete(origin);
      const reason = res.reason ?? 'address refused';
      return { expiresAt: now + this.cfg.robotsRetryMs, check: () => ({ kind: 'refused', reason }) };
    }
    const reason = unreadableReason(res);
    const failures = (this.failures.get(origin) ?? 0) + 1;
    setBounded(this.failures, origin, failures, this.maxOrigins);
    // A host without a DNS record has no server that asking again could burden: its URLs (a
    // manifest's typo, a domain gone) should not wait out the interval meant for a site in trouble.
    const retryMs = noSuchHost(res) ? Math.min(this.cfg.robotsRetryMs, NO_SUCH_HOST_RETRY_MS) : this.cfg.robotsRetryMs;
    // A site that answered 429 or 503 (or 509, 529) with a Retry-After longer than our interval gets that long.
    const askedMs = isThrottle(res.status) ? parseRetryAfter(res.retryAfter, now, MAX_ROBOTS_RETRY_AFTER_MS, res.siteDate) : undefined;
    const retryAtMs = now + Math.max(retryMs, askedMs ?? 0);
    const giveUp = failures >= this.cfg.robotsMaxTries;
    // What the site answered is kept for the other workers; a failure to reach it may be this worker's own.
    if (res.status !== undefined && siteInTrouble(res.status) && this.shelf) {
      setBounded(this.keptTrouble, origin, retryAtMs, this.maxOrigins);
      this.keep(origin, { fetchedAtMs: now, status: res.status, unreadable: { reason, tries: failures, retryAtMs } });
    }
    // Once per read: the monitor shows it only while the host holds its whole source (a source
    // spanning several hosts goes on with the others meanwhile).
    log.warn({ event: 'robots-unavailable', origin, reason, try: failures, of: this.cfg.robotsMaxTries, ...(giveUp ? {} : { askedAgainAt: new Date(retryAtMs).toISOString() }) },
      giveUp ? 'robots.txt unreadable again: its URLs fail' : 'robots.txt unreadable: its URLs wait until it is asked again');
    return unavailable(reason, failures, giveUp, retryAtMs, retryMs);
  }
}

/** The entry of an origin whose robots.txt could not be read, until it is asked again at `retryAtMs`. */
function unavailable(reason: string, tries: number, giveUp: boolean, retryAtMs: number, retryMs: number): Entry {
  const told = giveUp ? `${reason}; gave up after ${tries === 1 ? '1 try' : `${tries} tries at least ${interval(retryMs)} apart`}` : reason;
  return { expiresAt: retryAtMs, check: () => ({ kind: 'unavailable', reason: told, retryAtMs, giveUp, tries }) };
}

/**
 * The resolver's answer that the name does not exist (NXDOMAIN, or no address records). Not
 * EAI_AGAIN, which is the resolver failing: that one waits the full interval like any outage.
 */
function noSuchHost(res: FetchResult): boolean {
  return res.status === undefined && res.failure === 'network' && /\bENOTFOUND\b/.test(res.reason ?? '');
}

/** Why robots.txt could not be read, for the records of the URLs that wait for it. */
function unreadableReason(res: FetchResult): string {
  const why = res.reason ?? res.failure;
  if (res.failure === 'bad-encoding') return `robots.txt unreadable (${res.reason})`;
  if (res.failure === undefined) return `robots.txt answered ${res.status}`;
  if (res.status === undefined) return `robots.txt unreachable (${why})`;
  // A status came but the body did not (dripped, cut off): not what the status means.
  if (res.failure === 'too-slow' || res.failure === 'timeout' || res.failure === 'network' || res.failure === 'protocol') return `robots.txt answered ${res.status} but its body did not arrive (${why})`;
  return `robots.txt answered ${res.status} (${why})`;
}

function interval(ms: number): string {
  return ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : ms >= 1_000 ? `${Math.round(ms / 1_000)} s` : `${ms} ms`;
}
