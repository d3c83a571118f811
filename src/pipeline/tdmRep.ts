import { setBounded } from '../shared/boundedMap';
import type { PipelineConfig } from './config';
import type { Fetcher } from './fetcher';
import type { RightsHeaders } from './rightsHeaders';
import type { SiteQuota } from '../politeness/rateLimitHeaders';
import { type SiteFileShelf, siteInTrouble, spreadTtlMs } from './siteFileShelf';

/**
 * A site's TDMRep file (W3C community group's TDM Reservation Protocol, "TDM file on the origin
 * server"): `/.well-known/tdmrep.json`, an array of rules `{ "location": pattern,
 * "tdm-reservation": 1 | 0, "tdm-policy"?: URL }`. Most sites that reserve text-and-data-mining
 * rights (EU directive 2019/790 art. 4) say so there rather than in a header on every response.
 *
 * The spec's order of precedence: the file first, then a `tdm-reservation` / `tdm-policy`
 * header on the resource, which supersedes it property by property (an absent header leaves the
 * file's value). Of the rules, the first whose pattern matches the URL's path applies; none
 * matching, or no usable file (any answer but a JSON array, including a redirect or an error),
 * means the reservation is unset. Patterns are robots.txt's: a path prefix, `*` for any
 * characters, `$` for the end, compared case-sensitively after decoding percent-escapes of
 * unreserved characters.
 *
 * Read once per origin (cached like robots.txt, at most 24 h), in a request slot of its own, and
 * only when CRAWL_READ_TDMREP is set: it is one more request to every host.
 */

const TDMREP_PATH = '/.well-known/tdmrep.json';
/** A file of a few hundred rules is a few tens of KiB; a larger answer is not a TDMRep file. */
const TDMREP_MAX_BYTES = 256 * 1024;
/** Rules kept at most per origin: the first match wins, so later ones are rarely reached. */
const MAX_RULES = 1_000;
const MAX_ORIGINS = 10_000;
const MAX_POLICY_CHARS = 500;

export interface TdmRule {
  pattern: string;
  /** '1' reserved, '0' not, undefined: the rule's value is not 0 or 1 (unset, a protocol error). */
  reservation?: '1' | '0';
  policy?: string;
}

interface Entry {
  expiresAt: number;
  rules: TdmRule[];
}

/** The rules of a tdmrep.json body; [] for anything that is not a JSON array of rules. */
export function parseTdmRep(text: string): TdmRule[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch {
    return [];
  }
  if (!Array.isArray(doc)) return [];
  const rules: TdmRule[] = [];
  for (const r of doc.slice(0, MAX_RULES)) {
    if (typeof r !== 'object' || r === null) continue;
    const o = r as Record<string, unknown>;
    const location = o.location;
    if (typeof location !== 'string' || !location.startsWith('/')) continue;
    const value = o['tdm-reservation'];
    const reservation = value === 1 || value === '1' ? '1' : value === 0 || value === '0' ? '0' : undefined;
    const policy = typeof o['tdm-policy'] === 'string' && o['tdm-policy'].length <= MAX_POLICY_CHARS ? o['tdm-policy'] : undefined;
    rules.push({ pattern: normalise(location), ...(reservation ? { reservation } : {}), ...(policy ? { policy } : {}) });
  }
  return rules;
}

/** The first rule whose pattern matches the URL's path (and query), else undefined. */
export function tdmRuleFor(rules: readonly TdmRule[], url: URL): TdmRule | undefined {
  const path = normalise(url.pathname + url.search);
  return rules.find((r) => matches(r.pattern, path));
}

/** Percent-escapes of unreserved characters decoded, as both sides are compared (robots.txt's rule). */
function normalise(s: string): string {
  return s.replace(/%([0-9A-Fa-f]{2})/g, (esc, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16));
    return /[A-Za-z0-9\-._~]/.test(c) ? c : esc.toUpperCase();
  });
}

/**
 * A robots.txt-style pattern against a path: `*` any characters, a final `$` the end, else a
 * prefix. Matched piece by piece, each `*`'s following piece at its first place: linear in the
 * path for each piece, where a regular expression of several `*` could backtrack for seconds.
 */
export function matches(pattern: string, path: string): boolean {
  const anchored = pattern.endsWith('$');
  const pieces = (anchored ? pattern.slice(0, -1) : pattern).split('*');
  const first = pieces[0]!;
  if (!path.startsWith(first)) return false;
  if (pieces.length === 1) return !anchored || path.length === first.length;
  let at = first.length;
  const middle = anchored ? pieces.slice(1, -1) : pieces.slice(1);
  for (const piece of middle) {
    const found = path.indexOf(piece, at);
    if (found < 0) return false;
    at = found + piece.length;
  }
  if (!anchored) return true;
  const last = pieces[pieces.length - 1]!;
  return path.length - last.length >= at && path.endsWith(last);
}

/**
 * The response's rights headers with the site's rule filled in where the response said nothing
 * of TDM: the header, when present, supersedes the file.
 */
export function withSiteRule(headers: RightsHeaders | undefined, rule: TdmRule | undefined): RightsHeaders | undefined {
  if (!rule || (rule.reservation === undefined && rule.policy === undefined)) return headers;
  const merged: RightsHeaders = { ...headers };
  if (merged.tdmReservation === undefined && rule.reservation !== undefined) merged.tdmReservation = rule.reservation;
  if (merged.tdmPolicy === undefined && rule.policy !== undefined) merged.tdmPolicy = rule.policy;
  return merged;
}

export class TdmRepCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inflight = new Set<string>();

  /** `shelf`: where the workers of a crawl keep the files they read (see SiteFileShelf). */
  constructor(private readonly fetcher: Fetcher, private readonly cfg: PipelineConfig, private readonly now: () => number = Date.now, private readonly shelf?: SiteFileShelf) {}

  private fresh(url: URL): Entry | undefined {
    const e = this.entries.get(url.origin);
    return e && e.expiresAt > this.now() ? e : undefined;
  }

  /** Store writes under way have finished (tests wait for them before a second worker looks). */
  async settled(): Promise<void> {
    await this.shelf?.settled();
  }

  /** Whether the URL's origin's file is known (no request needed). */
  known(url: URL): boolean {
    return this.fresh(url) !== undefined;
  }

  /** The rule for a URL when its origin's file is known, else undefined. */
  ruleFor(url: URL): TdmRule | undefined {
    const e = this.fresh(url);
    return e && tdmRuleFor(e.rules, url);
  }

  /**
   * Reads the origin's file in this request slot. True when a request went out (whatever its
   * answer); false when none did (too late for the slot, or another URL is reading it now);
   * 'kept' when another worker's read of it was in the store (no request: the slot is free).
   * `onQuota`: what the answer's rate-limit headers said of the site's quota, as an image's would.
   */
  async load(url: URL, signal?: AbortSignal, sendBy?: number, mayGoLate?: () => boolean, onQuota?: (quota: SiteQuota) => void): Promise<boolean | 'kept'> {
    const origin = url.origin;
    if (this.inflight.has(origin)) return false;
    this.inflight.add(origin);
    try {
      if (this.shelf) {
        const ttlMs = spreadTtlMs(this.cfg.robotsTtlMs);
        const kept = await this.shelf.read(origin, this.now(), ttlMs);
        if (kept) {
          setBounded(this.entries, origin, { expiresAt: kept.fetchedAtMs + ttlMs, rules: kept.rules ? parseTdmRep(kept.rules) : [] }, MAX_ORIGINS);
          return 'kept';
        }
      }
      const res = await this.fetcher.fetch(`${origin}${TDMREP_PATH}`, { signal, sendBy, mayGoLate, maxBytes: TDMREP_MAX_BYTES, accept: 'application/json,*/*;q=0.5', followRedirects: false });
      if (res.failure === 'late') return false;
      if (res.quota) onQuota?.(res.quota);
      const now = this.now();
      // A site in trouble (5xx, 429, no answer) may have a file: it is asked again as robots.txt would be.
      const trouble = res.status === undefined || res.status >= 500 || siteInTrouble(res.status);
      const text = res.ok ? res.body?.toString('utf8') ?? '' : undefined;
      const rules = text !== undefined ? parseTdmRep(text) : [];
      setBounded(this.entries, origin, { expiresAt: now + (trouble ? this.cfg.robotsRetryMs : this.cfg.robotsTtlMs), rules }, MAX_ORIGINS);
      if (this.shelf && !trouble && res.status !== undefined) this.shelf.write(origin, { fetchedAtMs: now, status: res.status, ...(text !== undefined ? { rules: text } : {}) });
      return res.sent;
    } finally {
      this.inflight.delete(origin);
    }
  }
}
