/**
 * What a site's rate-limit response headers say of the requests it will still take: the quota
 * that API gateways and CDNs (Kong, Envoy, Traefik, nginx modules, GitHub-style APIs) publish so
 * that a client can stop before it is refused. A crawler that reads them sends nothing once the
 * site says none is left, instead of learning it from a run of 429s.
 *
 * The forms in use, all read here:
 * - `RateLimit: "default";r=0;t=30` (draft-ietf-httpapi-ratelimit-headers-08 and later: a list
 *   of quota policies, `r` the units left, `t` seconds until more are);
 * - `RateLimit: limit=100, remaining=0, reset=30` (drafts -06 and -07);
 * - `RateLimit-Remaining` / `RateLimit-Reset` / `RateLimit-Limit` (drafts up to -05), and the
 *   older `X-RateLimit-*` and `X-Rate-Limit-*` headers. Their reset is seconds from now, or a
 *   Unix time in seconds (GitHub, Twitter) when it is that large.
 */

import { parseHttpDate } from '../shared/httpDate';

/** The site's quota as a response stated it. */
export interface SiteQuota {
  /** Requests (quota units) the site will still take in its current window. */
  remaining: number;
  /** When the window ends and the quota is given again (epoch ms), when the site said. */
  resetAtMs?: number;
  /** The window's whole quota, when the site said. */
  limit?: number;
}

/** A reset at least this large is a Unix time, not a number of seconds (about 2001-09-09). */
const UNIX_TIME_FROM_S = 1_000_000_000;

/** The headers' prefixes, newest first: the first that gives a remaining count is the one read. */
const SEPARATE_PREFIXES = ['ratelimit-', 'x-ratelimit-', 'x-rate-limit-'];

type HeaderOf = (name: string) => string | undefined;

/** A non-negative decimal number at the start of `text` (a list's first member), else undefined. */
function leadingNumber(text: string | undefined): number | undefined {
  const m = text === undefined ? null : /^\s*(\d+(?:\.\d+)?)\s*(?:[,;]|$)/.exec(text);
  return m ? Number(m[1]) : undefined;
}

/**
 * A Unix-time reset is on the site's clock: measured from the response's Date when it has one,
 * so a site whose clock is off holds us no longer than it meant.
 */
function resetAt(seconds: number | undefined, nowMs: number, siteNowMs?: number): number | undefined {
  if (seconds === undefined) return undefined;
  if (seconds < UNIX_TIME_FROM_S) return nowMs + seconds * 1000;
  return nowMs + (seconds * 1000 - (siteNowMs ?? nowMs));
}

/** `RateLimit` of drafts -08 on: the policy with the fewest units left (the one that binds). */
function fromPolicyList(value: string, nowMs: number): SiteQuota | undefined {
  let least: SiteQuota | undefined;
  for (const item of value.split(',')) {
    const params = new Map<string, string>();
    for (const part of item.split(';').slice(1)) {
      const eq = part.indexOf('=');
      if (eq > 0) params.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
    }
    const remaining = leadingNumber(params.get('r'));
    if (remaining === undefined) continue;
    const reset = leadingNumber(params.get('t'));
    // Of two policies with none left, the later reset is when a request may go.
    const binds = least === undefined || remaining < least.remaining
      || (remaining === least.remaining && (resetAt(reset, nowMs) ?? 0) > (least.resetAtMs ?? 0));
    if (binds) least = { remaining, ...(reset !== undefined ? { resetAtMs: resetAt(reset, nowMs) } : {}) };
  }
  return least;
}

/** `RateLimit` of drafts -06 and -07: a dictionary of limit, remaining and reset. */
function fromDictionary(value: string, nowMs: number): SiteQuota | undefined {
  const fields = new Map<string, string>();
  for (const part of value.split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  const remaining = leadingNumber(fields.get('remaining'));
  if (remaining === undefined) return undefined;
  const reset = leadingNumber(fields.get('reset'));
  const limit = leadingNumber(fields.get('limit'));
  return { remaining, ...(reset !== undefined ? { resetAtMs: resetAt(reset, nowMs) } : {}), ...(limit !== undefined ? { limit } : {}) };
}

/**
 * The quota a response's headers state (`header` gives a header's value by its lower-case
 * name), or undefined when they state none. A value that cannot be read is left out, as if
 * the site had not sent it: the crawler's own pacing and the 429 reflex still hold.
 */
export function readSiteQuota(header: HeaderOf, nowMs: number): SiteQuota | undefined {
  const quota = statedQuota(header, nowMs);
  // A window's quota of none at all is not a limit one can keep to but a misconfiguration (a
  // site that wants nothing sent says so with robots.txt or a 403): read as no quota stated,
  // the 429 reflex still holding. Kept to, it would hold the source for good, 15 min at a time.
  return quota?.limit === 0 ? undefined : quota;
}

function statedQuota(header: HeaderOf, nowMs: number): SiteQuota | undefined {
  const date = header('date');
  const siteNow = date === undefined ? undefined : parseHttpDate(date);
  const combined = header('ratelimit');
  if (combined !== undefined) {
    const quota = /(^|;)\s*r\s*=/i.test(combined) ? fromPolicyList(combined, nowMs) : fromDictionary(combined, nowMs);
    if (quota) return quota;
  }
  for (const prefix of SEPARATE_PREFIXES) {
    const remaining = leadingNumber(header(`${prefix}remaining`));
    if (remaining === undefined) continue;
    const reset = resetAt(leadingNumber(header(`${prefix}reset`)), nowMs, siteNow);
    const limit = leadingNumber(header(`${prefix}limit`));
    return { remaining, ...(reset !== undefined ? { resetAtMs: reset } : {}), ...(limit !== undefined ? { limit } : {}) };
  }
  return undefined;
}

/**
 * How long nothing more may go to the site by its quota, ms from `nowMs`: undefined while it
 * has requests left. None left and no reset given: `defaultMs`.
 */
export function quotaWaitMs(quota: SiteQuota | undefined, nowMs: number, defaultMs: number): number | undefined {
  if (quota === undefined || quota.remaining >= 1) return undefined;
  return quota.resetAtMs === undefined ? defaultMs : Math.max(0, quota.resetAtMs - nowMs);
}

/** The quota in words for a note: "none of its 100 requests left" or "no requests left". */
export function quotaText(quota: Pick<SiteQuota, 'limit'>): string {
  return quota.limit !== undefined ? `none of its ${quota.limit} requests left` : 'no requests left';
}
