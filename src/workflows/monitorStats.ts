import { REFUSED_HOLD_MS } from '../politeness/refusalHold';
import { workersBehindNote } from '../politeness/missedSlots';
import { sameImageNote, type SameImageRun } from '../politeness/sameImage';
import { quotaText } from '../politeness/rateLimitHeaders';
import type { Counts, GovernorMode } from '../politeness/governor';
import { durationText, secondsLeft } from './timeLeft';
import { FINISHED } from '../temporal/searchAttributes';

/**
 * What a monitor shows of itself (its `stats` query), and the notes read from it: the status
 * table's, `crawl run`'s and `monitoring_update`'s, and the Web UI's details. Kept apart from the
 * monitor's bookkeeping (monitorState.ts), which produces the stats, as the CLI reads them too.
 */

/** A host of a spanning source that goes at its own Crawl-delay while the others go at the source's rate. */
export function hostCrawlDelayNote(h: { origin: string; delayS: number }): string {
  return `${h.origin} asks for ${h.delayS} s between requests (robots.txt Crawl-delay): its URLs go one at a time that far apart, the source's other hosts at its rate`;
}

export interface MonitorStats {
  source: string;
  /**
   * The governor's mode; `finished` only in the result of a monitor that completed because every
   * URL it was given has ended (its mode stays running), as its CrawlState and details say.
   */
  state: GovernorMode | typeof FINISHED;
  rate: number;
  target: number;
  /** The global ceiling (`--max-rate` at start, or `set-max-rate` since), or null. */
  maxRate: number | null;
  /** The longest Retry-After honoured, s (`--max-retry-after` at start or a later start, or `set-max-retry-after` since); absent from monitors of older builds. */
  maxRetryAfterS?: number;
  /** The source's maxConnections, when it has one (SourceConfig); absent otherwise. */
  maxConnections?: number;
  /** The most the site's robots.txt Crawl-delay allows, once it has been found to matter, or null. */
  siteMaxRate: number | null;
  burst: number;
  ceilingPerSecond: number;
  /** No grant before this time: the site's Retry-After (or the default hold after a 429/503). */
  retryAfterUntil: string | null;
  /** No grant before this time: the wait the site's robots.txt Crawl-delay asks for. */
  crawlDelayUntil: string | null;
  /**
   * No grant before this time: the site's rate-limit headers (RateLimit, X-RateLimit-*) said none
   * of its requests was left until its quota resets then; null otherwise; absent from monitors
   * of older builds.
   */
  quotaUntil?: string | null;
  /** While quotaUntil is set: the site's whole quota for its window, when its headers said it. */
  quotaLimit?: number | null;
  /**
   * The pace the site's quota allows, as its rate-limit headers said when it was last spent:
   * `limit` requests each `everyS` seconds; null (or absent, from an older worker) when it binds
   * no more or never did. The time left is at this pace when it is below the rate.
   */
  quotaPace?: { limit: number; everyS: number } | null;
  /** No grant before this time: robots.txt could not be read and is asked for again then. */
  robotsRetryAt: string | null;
  /** While robotsRetryAt is set: which origin's robots.txt, why it could not be read, and its try count. */
  robotsError?: string | null;
  /**
   * A source spanning several hosts goes on with the others while one host's robots.txt cannot
   * be read: that host (origin, why, try count) and when its URLs are tried again. Null otherwise.
   */
  robotsHostWait?: { error: string; until: string } | null;
  /**
   * A source spanning several hosts whose grants have been spacing one host's URLs by its
   * robots.txt Crawl-delay (seconds) while the others went at the source's rate: the strictest such
   * host reported in the last two minutes, while the source itself is not capped by one. Null otherwise.
   */
  hostCrawlDelay?: { origin: string; delayS: number } | null;
  /** No grant before this time: the store failed (`storeError` says how); the URLs keep their attempts. */
  storeRetryAt?: string | null;
  storeError?: string | null;
  /**
   * The latest time (within the last five minutes) a grant's requests were not sent because the
   * worker's own network looked down; null otherwise; absent from monitors of older builds.
   */
  networkDownAt?: string | null;
  coolingUntil: string | null;
  haltReason: string | null;
  /**
   * While a running source's rate is below its target: what lowered it last (`by`: a 429, 503, 509 or 529,
   * its TTFB, a temporary halt, a global ceiling since raised), when, and when the additive ramp brings it back to the target
   * if nothing lowers it again. Null otherwise; absent from monitors of older builds.
   */
  slowed?: { by: string; at: string; backAt: string } | null;
  counts: Counts;
  /** Of `counts.content`, the answers that were pages, empty bodies, endless redirects or 4xx refusals (pageRun.ts); absent from monitors of older builds. */
  pages?: number;
  /** Of `counts.content`, those an earlier crawl recorded, of chunks this monitor took up after a stop; absent from monitors of older builds. */
  contentBefore?: number;
  urls: { total: number; finished: number; queuedChunks: number; inBatches: number };
  /** `lost`: batches that ended without finishing their chunks, to be started again (lostBatches.ts); absent from monitors of older builds. */
  batches: { active: number; finished: number; lost?: number };
  /**
   * `missed`: slots that served no URL: the worker was too busy to send in time (add workers if high), or robots.txt took the slot.
   * `missRate`: the share of recent slots missed (a running average over reports; absent from monitors of older builds).
   * `leadMs`: how far ahead of its issue a grant's window starts, learnt from how long grants take to reach their activity (300 on an idle worker).
   */
  tokens: { granted: number; unused: number; missed: number; missRate?: number; wanted: number; nextWindowAt: string | null; leadMs: number };
  /**
   * `share`: of the recent requests sent, those that waited for a connection to the site, every
   * one of the worker's to it (`perSite` of them) carrying a request (absent from monitors of older builds).
   * `learnt`: `perSite` is the limit the worker learnt for the site (its downloads slowed as more
   * were open), and `share` is of its slots, those that passed while the site had that many open.
   * `given`: the same, with `perSite` the source's own maxConnections.
   * `starting`: with `learnt`, `perSite` is the worker's start for a site of large images, before it has judged them.
   * `refused`: with `learnt`, the site refused (503, 429) a request sent with more than `perSite` open.
   */
  connectionWaits?: { share: number; perSite: number | null; learnt?: true; given?: true; starting?: true; refused?: true };
  /** Per origin, the downloads at once a worker last found the site to bear, handed to every worker with its grants (MonitorState.openLimits). */
  openLimits?: Record<string, number>;
  breaker: { windowRequests: number; windowErrors: number; consecutiveErrors: number; last50: string };
  latency: { baselineMs: number | null; recentMedianMs: number | null };
  /** The latest images in a row that were one and the same file (sha: first 8 hex digits of its sha256); absent from monitors of older builds. */
  sameImage?: SameImageRun | null;
  alerts: string[];
}

/**
 * The workers-behind note (workersBehindNote) for a source that is sending: not while a
 * Retry-After, an unreadable robots.txt or a failing store holds it, when its miss rate is
 * from before the hold. The table of `crawl status`, `monitoring_update` and the Web UI's
 * details all ask here.
 */
export function behindNote(st: MonitorStats): string | undefined {
  if (!sendingNow(st) || connectionsFull(st)) return undefined;
  // No tokens in some hand-made stats; no missRate from monitors of older builds.
  return workersBehindNote(st.rate, st.tokens?.missRate);
}

function sendingNow(st: MonitorStats): boolean {
  return st.state === 'running' && !st.retryAfterUntil && !st.quotaUntil && !st.robotsRetryAt && !st.storeRetryAt && !st.networkDownAt;
}

/**
 * A share of a source's recent requests this high waited for a connection to the site: its
 * answers, not the worker, set its pace. A site at its edge has a request wait now and then.
 */
const CONNECTION_WAIT_SHARE = 0.2;

function connectionsFull(st: MonitorStats): boolean {
  return (st.connectionWaits?.share ?? 0) >= CONNECTION_WAIT_SHARE;
}

/**
 * Who holds a source's requests open at once: its catalogue's maxConnections (`given`), what the
 * worker learnt of the site (`refused` beyond a number, `starting` while it judges large images,
 * `learnt` from slowing downloads), or the worker's own cap (`full`).
 */
export function connectionsFullKind(st: Pick<MonitorStats, 'connectionWaits'>): 'given' | 'refused' | 'starting' | 'learnt' | 'full' {
  const w = st.connectionWaits;
  if (w?.given) return 'given';
  if (!w?.learnt) return 'full';
  return w.refused ? 'refused' : w.starting ? 'starting' : 'learnt';
}

/**
 * The note for a source that answers too slowly for its rate: at 3 s an answer, 30 requests a
 * second need 90 open at once, and a worker keeps to CRAWL_MAX_CONNECTIONS_PER_SITE (each can be
 * a server process of the site's, held busy). Told as "workers behind", it sent operators to add
 * workers, each of which would open as many again.
 */
export function connectionsFullNote(st: MonitorStats): string | undefined {
  if (!sendingNow(st) || !connectionsFull(st)) return undefined;
  const perSite = st.connectionWaits!.perSite;
  const kind = connectionsFullKind(st);
  if (kind === 'given') {
    return `site held by its maxConnections: ${perSite ?? 'its'} requests open at once, and ${Math.round(st.connectionWaits!.share * 100)}% of its recent slots ` +
      `passed waiting for one to end, so it gets less than its ${Number(st.rate.toPrecision(3))}/s: raise maxConnections in its catalogue entry (crawl start --catalog) ` +
      'if the site bears more at once, or lower its rate (crawl set-rate)';
  }
  // No operator's doing: the worker keeps to what the site's link bears, and tries more now and then.
  if (kind === 'refused') {
    return `site refuses requests beyond ${perSite ?? 'a few'} open at once (it answered 429 or 503, or 509 or 529, to one sent with that many open), so the worker ` +
      `keeps to ${perSite ?? 'that'} for ${REFUSED_HOLD_MS / 60_000} minutes, and ${Math.round(st.connectionWaits!.share * 100)}% of its recent slots passed waiting for one to end: ` +
      `it gets less than its ${Number(st.rate.toPrecision(3))}/s (lower its rate with crawl set-rate, or give it maxConnections in its catalogue entry)`;
  }
  if (kind === 'starting') {
    return `site answers slowly: its images are large, and the worker keeps ${perSite ?? 'a few'} of them downloading at once until it has seen ` +
      `how they fare, so ${Math.round(st.connectionWaits!.share * 100)}% of its recent slots passed waiting for one to end: it gets less than its ` +
      `${Number(st.rate.toPrecision(3))}/s for now (the worker allows twice as many each time that many keep their speed)`;
  }
  if (kind === 'learnt') {
    return `site answers slowly: its downloads slowed as more were open, so the worker keeps ${perSite ?? 'a few'} open at once, ` +
      `the most it was found to bear, and ${Math.round(st.connectionWaits!.share * 100)}% of its recent slots passed waiting for one to end: ` +
      `it gets less than its ${Number(st.rate.toPrecision(3))}/s (the worker tries more at once now and then)`;
  }
  const median = st.latency?.recentMedianMs ?? st.latency?.baselineMs ?? null;
  const bears = perSite !== null && median !== null && median > 0 ? Math.floor((perSite * 1000 / median) * 10) / 10 : null;
  return `site answers slowly: ${Math.round(st.connectionWaits!.share * 100)}% of its recent requests waited for a connection, ` +
    `every one of the worker's ${perSite !== null ? `${perSite} ` : ''}connections to it waiting for an answer` +
    (median !== null ? ` (median time to first byte ${Math.round(median / 100) / 10} s)` : '') +
    `, so it gets ${bears !== null && bears < st.rate ? `at most about ${bears}/s of` : 'less than'} its ${Number(st.rate.toPrecision(3))}/s: lower its rate (crawl set-rate), ` +
    'or, if the site can bear more requests at once, raise CRAWL_MAX_CONNECTIONS_PER_SITE';
}

/**
 * A source whose slots pass because the worker's own network is down (pipeline/workerOutage.ts):
 * not a worker falling behind, and nothing an operator should do to the source.
 */
export function networkDownNote(st: MonitorStats): string | undefined {
  if (!st.networkDownAt || st.state === 'halted' || st.state === 'paused') return undefined;
  return `worker's network down: no site answered and connections found no route (last at ${st.networkDownAt}); ` +
    'its slots pass unsent and nothing counts against the site: it goes on once the network is back';
}

/** Content errors and not one image after this many: worth a word before the source's last URL. */
export const NO_IMAGES_AFTER = 50;

/**
 * A source whose answers so far were all content errors: files that are not images sharp reads
 * (SVGs, PDFs, HEIC photos) or were cut short. Web pages halt a source (pageRun.ts); these are
 * not the site's ill health, so nothing slows down, and a million such URLs would be asked for
 * and recorded before anyone looked. The status table, `crawl run` and the Web UI's details say
 * so once there are NO_IMAGES_AFTER of them.
 */
export function noImagesNote(st: MonitorStats, crawl: CrawlCommand = plainCrawl): string | undefined {
  // Pages have their own word, the halt; once an operator resumes past it, they are not news.
  // Nor are the records of an earlier crawl of the same chunks (taken up after a stop).
  if (st.counts.done > 0 || st.counts.content - (st.pages ?? 0) - (st.contentBefore ?? 0) < NO_IMAGES_AFTER) return undefined;
  return `no image yet: its first ${NO_IMAGES_AFTER}+ answers were all content errors (files sharp does not read, such as SVGs, PDFs or HEIC photos, ` +
    `or cut short): \`${crawl(`reasons ${st.source}`)}\` shows what came instead, \`${crawl(`pause ${st.source}`)}\` stops asking`;
}

/** One image under every URL of late (sameImage.ts); undefined otherwise. `crawl` null: the source has finished. */
export function placeholderNote(st: MonitorStats, crawl: CrawlCommand | null = plainCrawl): string | undefined {
  return sameImageNote(st.sameImage, crawl ? crawl(`pause ${st.source}`) : undefined);
}

/**
 * What a source's answers tell that its counts do not (no image yet, one image for every URL),
 * for the status table, `crawl run`'s notes and `monitoring_update`. `crawl` null: the source has
 * finished, and only the placeholder note still says something its records do not.
 */
export function answersNote(st: MonitorStats, crawl: CrawlCommand | null = plainCrawl): string | undefined {
  return crawl ? noImagesNote(st, crawl) ?? placeholderNote(st, crawl) : placeholderNote(st, null);
}

/** A `crawl` command line as a note suggests it: `crawl run` adds what reaches its own server and store. */
export type CrawlCommand = (args: string) => string;

const plainCrawl: CrawlCommand = (args) => `crawl ${args}`;

/**
 * The Web UI's current details of a monitor, in markdown. What a site wrote (a page's first words
 * in a halt's reason, an error's text) is shown as text: `[Verify](https://...)` from a block
 * page must not become a link in the operator's view, nor `<...>` markup.
 */
export function detailsMarkdown(s: MonitorStats, state: string, nowMs?: number): string {
  const left = nowMs !== undefined && s.urls.finished < s.urls.total ? secondsLeft(s, nowMs) : null;
  const lines = [
    `## ${asText(s.source)}: **${state}**`,
    `rate **${s.rate}/s** of target ${s.target}/s (burst ${s.burst})` +
      `${s.siteMaxRate !== null ? `; at most ${s.siteMaxRate}/s by the site's robots.txt Crawl-delay` : ''}${s.maxRate !== null ? `; global ceiling ${s.maxRate}/s` : ''}` +
      `${s.maxConnections !== undefined ? `; at most ${s.maxConnections} requests open at once (maxConnections)` : ''}`,
    // With the time it ends: the details are written when something happens, and a long hold writes nothing.
    `URLs ${s.urls.finished}/${s.urls.total} finished${left !== null ? ` (about ${durationText(left)} left at this pace, to about ${minuteOf(nowMs! + left * 1000)})` : ''}; batches ${s.batches.active} active, ${s.batches.finished} done`,
    `done ${s.counts.done} · link rot ${s.counts.linkrot} · robots ${s.counts.robots} · content ${s.counts.content} · refused ${s.counts.refused} · errors ${s.counts.error} · retries ${s.counts.retries}`,
    `breaker: ${s.breaker.windowErrors}/${s.breaker.windowRequests} errors in 60 s, ${s.breaker.consecutiveErrors} consecutive`,
  ];
  if (s.openLimits) {
    lines.push(`downloads open at once, as a worker found the site's link to bear (every worker keeps to it): ${Object.entries(s.openLimits).map(([origin, n]) => `${n} at ${asText(origin)}`).join(', ')}`);
  }
  if (s.retryAfterUntil) lines.push(`Retry-After hold until ${s.retryAfterUntil}`);
  if (s.quotaUntil) lines.push(quotaNote(s.quotaUntil, s.quotaLimit));
  const quotaPace = quotaPaceNote(s);
  if (quotaPace) lines.push(quotaPace);
  if (s.crawlDelayUntil) lines.push(`robots.txt Crawl-delay: next request not before ${s.crawlDelayUntil}`);
  if (s.robotsRetryAt) lines.push(`robots.txt unavailable${s.robotsError ? ` (${asText(s.robotsError)})` : ''}: asked again at ${s.robotsRetryAt}, nothing sent until then`);
  if (s.robotsHostWait) lines.push(`one host's robots.txt unavailable (${asText(s.robotsHostWait.error)}): its URLs wait until ${s.robotsHostWait.until}; the source goes on with its other hosts`);
  if (s.hostCrawlDelay) lines.push(asText(hostCrawlDelayNote(s.hostCrawlDelay)));
  if (s.storeRetryAt) lines.push(`**store failing** (${asText(s.storeError ?? 'no details')}): nothing sent until ${s.storeRetryAt}; URLs keep their attempts`);
  if (s.coolingUntil) lines.push(`temporary halt until ${s.coolingUntil}`);
  if (s.slowed) lines.push(slowedNote(s.slowed, s.target));
  if (s.haltReason) lines.push(`**HALTED**: ${asText(s.haltReason)}. Resume with the \`resume\` update or \`crawl resume\`.`);
  const networkDown = networkDownNote(s);
  if (networkDown) lines.push(`**${networkDown.replace(/^worker's network down/, "Worker's network down**")}`);
  const behind = behindNote(s);
  if (behind) lines.push(`**${behind.replace(/^workers behind/, 'Workers behind**')}`);
  const slowSite = connectionsFullNote(s);
  if (slowSite) lines.push(`**${slowSite.replace(/^site (answers slowly|held by its maxConnections)/, (_, what: string) => `Site ${what}**`)}`);
  const noImages = noImagesNote(s);
  if (noImages) lines.push(`**${noImages.replace(/^no image yet/, 'No image yet**')}`);
  const placeholder = placeholderNote(s);
  if (placeholder) lines.push(`**${placeholder.replace(/^one image for every URL/, 'One image for every URL**')}`);
  if (s.alerts.length) lines.push('', 'recent events:', ...s.alerts.slice(-5).map((a) => `- ${asText(a)}`));
  return lines.join('\n');
}

/** A time to the minute, in UTC: 2026-11-29T23:40Z. */
function minuteOf(ms: number): string {
  return `${new Date(Math.ceil(ms / 60_000) * 60_000).toISOString().slice(0, 16)}Z`;
}

/** Why a running source's rate is below its target, and when it is back (MonitorStats.slowed). */
export function slowedNote(slowed: NonNullable<MonitorStats['slowed']>, target: number): string {
  return `slowed by ${slowed.by} at ${slowed.at}: back at ${target}/s by ${slowed.backAt} unless slowed again`;
}

/** Text as markdown shows it: every ASCII punctuation mark that markdown or HTML reads is escaped (CommonMark backslash escapes). */
export function asText(text: string): string {
  return text.replace(/[\\`*_{}[\]()<>#+!|~]/g, '\\$&');
}

/** A hold for a spent quota in words: the status table and the monitor's details both say it. */
/**
 * The site's quota as the pace it allows, when that is below the source's rate: the rate reads
 * 10/s while the site takes 100 requests an hour, and the time left is at the quota's pace.
 */
export function quotaPaceNote(s: Pick<MonitorStats, 'quotaPace' | 'rate'>): string | undefined {
  const q = s.quotaPace;
  if (!q || q.limit / q.everyS >= s.rate) return undefined;
  return `the site's quota (its rate-limit headers): ${q.limit} requests each ${durationText(q.everyS)}, about ${Number((q.limit / q.everyS).toPrecision(2))}/s on average; the time left is at that pace`;
}

export function quotaNote(until: string, limit: number | null | undefined): string {
  return `the site's rate-limit headers say ${quotaText(limit != null ? { limit } : {})}: nothing sent until its quota resets at ${until}`;
}
