import type { MonitorStats } from './monitorStats';

/**
 * How long a source's URLs still take at its pace: what an operator of a crawl of millions
 * asks first. Pure (the monitor's Web UI details use it on workflow time, `crawl status` and
 * `crawl run` on the clock).
 *
 * The pace is the monitor's rate less the slots that pass unsent (a busy worker, connections all
 * waiting on a slow site: `tokens.missRate`; a site held to the downloads its link bears), in requests a URL as the finished ones took (tries
 * again, redirects, robots.txt), after any hold, and rising with the ramp back to the target
 * when a 429, a slow answer or a halt lowered it, but no faster than the quota the site's
 * rate-limit headers gave when it was last spent. It does not foresee the next slow-down.
 */
export function secondsLeft(st: MonitorStats, nowMs: number): number | null {
  const left = Math.max(0, st.urls.total - st.urls.finished);
  if (left === 0) return 0;
  // Nothing moves until an operator acts.
  if (st.state !== 'running' && st.state !== 'cooling') return null;
  // A site held to the downloads its link bears (connectionWaits.learnt) passes slots as well.
  const heldShare = st.connectionWaits?.learnt || st.connectionWaits?.given ? st.connectionWaits.share : 0;
  const sent = 1 - Math.min(0.95, 1 - (1 - Math.max(0, st.tokens?.missRate ?? 0)) * (1 - Math.max(0, heldShare)));
  const now = st.rate * sent;
  const full = Math.max(st.rate, st.target) * sent;
  if (!(now > 0)) return null;
  const requests = left * requestsPerUrl(st);
  const holdEndMs = Math.max(nowMs, ...[st.retryAfterUntil, st.quotaUntil, st.crawlDelayUntil, st.robotsRetryAt, st.storeRetryAt, st.coolingUntil].map(timeOf));
  const held = (holdEndMs - nowMs) / 1000;
  const quota = st.quotaPace;
  if (quota && quota.limit / quota.everyS < full) {
    // The site's quota binds: a window's worth at our rate (a fresh one after its hold), then
    // a window's worth each cycle.
    const first = Math.min(requests, quota.limit);
    return held + first / now + (requests - first) / (quota.limit / quota.everyS);
  }
  const backMs = st.slowed ? timeOf(st.slowed.backAt) : 0;
  const rampS = Math.max(0, (backMs - holdEndMs) / 1000);
  return held + rampedSeconds(requests, now, full, rampS);
}

/** Requests a URL took so far, once enough URLs have finished to tell. */
const REQUESTS_PER_URL_FROM = 10;

function requestsPerUrl(st: MonitorStats): number {
  const requests = st.counts.requests ?? 0;
  if (st.urls.finished < REQUESTS_PER_URL_FROM || requests === 0) return 1;
  // A source mostly disallowed by robots.txt sends few requests, and its grants carry as many
  // more URLs (grantItems.ts); but each grant still takes a window: not less than 1/20 a URL.
  return Math.min(5, Math.max(0.05, requests / st.urls.finished));
}

/** Seconds to send `requests`, starting at `from`/s and rising evenly to `to`/s over `rampS` seconds. */
function rampedSeconds(requests: number, from: number, to: number, rampS: number): number {
  if (rampS <= 0 || to <= from) return requests / from;
  const duringRamp = ((from + to) / 2) * rampS;
  if (requests >= duringRamp) return rampS + (requests - duringRamp) / to;
  // from*t + (to-from)/(2*rampS)*t^2 = requests
  const a = (to - from) / (2 * rampS);
  return (-from + Math.sqrt(from * from + 4 * a * requests)) / (2 * a);
}

function timeOf(iso: string | null | undefined): number {
  if (!iso) return 0;
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? ms : 0;
}

/**
 * The longest of the sources' times left (they are crawled side by side), over those that will
 * finish without an operator: a paused or halted source waits for one.
 */
export function crawlSecondsLeft(estimates: readonly (number | null)[]): number | null {
  const known = estimates.filter((s): s is number => s !== null);
  return known.length ? Math.max(...known) : null;
}

/** A time left as people read it: 45s, 12m, 3h10m, 11d14h. */
export function durationText(seconds: number): string {
  const s = Math.ceil(seconds);
  if (s < 60) return `${s}s`;
  const m = Math.ceil(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, '0')}h`;
}
