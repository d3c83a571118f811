import { RETRY_AFTER_READ_CAP_MS } from './retryAfter';
import type { OutcomeClass, OutcomeReport, SourceConfig } from '../shared/types';
import { capRetryAfter, DEFAULT_ADAPTIVE, holdUntil, isHeld, newAdaptiveState, onLatencyElevated, onThrottle, ramp, reduceTo, type AdaptiveConfig, type AdaptiveState } from './adaptiveRate';
import { clearRun, clearWindow, DEFAULT_BREAKER, newBreakerState, recordRepeat, recordSample, shouldCoolDown, shouldHalt, windowCounts, type BreakerConfig, type BreakerState } from './breaker';
import { healthSample, isThrottle } from './classify';
import { DEFAULT_LATENCY, DEFAULT_TRANSFER, latencyElevated, learnBaseline, median, newLatencyState, recordTtfb, resetRecent, type LatencyConfig, type LatencyState } from './latency';
import { grantLeadMs, learnDispatch } from './grantLead';
import { newPacerState, FIRST_WINDOW_MS, PROBE_WINDOW_MS, planWindow, windowLengthMs, type PacerState, type PlannedGrant, type Want } from './pacing';
import { PAGES_FOR_HALT, pagesHaltReason, pagesSinceImage } from './pageRun';
import { targetRate } from './targetRate';
import { quotaText } from './rateLimitHeaders';

/**
 * One source's politeness state and decisions: target and current rate, Retry-After hold,
 * breaker windows, latency baseline and the pacing timeline. Plain data in, plain data out,
 * no clock of its own (every call takes `nowMs`), so the monitor workflow can carry it across
 * continue-as-new in one argument and the tests can drive it without Temporal.
 */

export type GovernorMode = 'running' | 'paused' | 'cooling' | 'halted' | 'stopped';

export interface GovernorConfig {
  adaptive: AdaptiveConfig;
  breaker: BreakerConfig;
  latency: LatencyConfig;
  /**
   * Lead between issuing a grant and its window start: time for the batch to start its activity
   * (~0.1 s on an idle worker, up to ~0.6 s on a loaded one). An activity that starts after its
   * window began moves its slots later by the lateness and loses only the slots pushed past the
   * window's end (pacedRunner), so a source idles for the longer of the lead and the lateness:
   * a short lead costs nothing, a long one idles every new source for all of it (1 s of a
   * 16 s benchmark crawl).
   */
  grantLeadMs: number;
  /** Pace this much below the rate so network jitter cannot push a 1 s window over its ceiling. */
  pacingMargin: number;
  /** Rate share to resume at after a temporary halt. */
  resumeShare: number;
  globalCeiling?: number;
}

export const DEFAULT_GOVERNOR: GovernorConfig = {
  adaptive: DEFAULT_ADAPTIVE,
  breaker: DEFAULT_BREAKER,
  latency: DEFAULT_LATENCY,
  grantLeadMs: 300,
  pacingMargin: 0.03,
  resumeShare: 0.5,
};

export type Counts = Record<OutcomeClass, number> & { requests: number; retries: number };

export interface GovernorState {
  source: string;
  sourceConfig: SourceConfig;
  /**
   * The catalogue entry (or start input's config) the source was last given: sourceConfig as it
   * was given, before an operator's set-rate. Absent in states carried from before it: then
   * sourceConfig stands for it.
   */
  catalogConfig?: SourceConfig;
  /**
   * The global ceiling a command that started or added work last gave (`--max-rate`,
   * CRAWL_MAX_RATE; null: none), before `crawl set-max-rate` changed it. Absent in states carried
   * from before it: the ceiling in force stands for it.
   */
  givenCeiling?: number | null;
  /**
   * The cap on the Retry-After honoured (ms) that a command starting or adding work last gave
   * (`--max-retry-after`), before `crawl set-max-retry-after` changed it. Absent until either
   * changed it: the cap in force stands for it.
   */
  givenMaxRetryAfterMs?: number;
  target: number;
  burst: number;
  mode: GovernorMode;
  coolingUntilMs: number;
  haltReason: string | null;
  adaptive: AdaptiveState;
  latency: LatencyState;
  /** The download-speed watch (ms per MiB of large images: latency.ts); absent until its first sample. */
  transfer?: LatencyState;
  breaker: BreakerState;
  pacer: PacerState;
  counts: Counts;
  nextGrantId: number;
  /**
   * The most the site's robots.txt allows (1 / Crawl-delay), once a fetch activity has reported
   * one that our rate went past; no target or operator rate goes above it. Absent in states
   * carried from before it existed.
   */
  siteMaxRate?: number;
  /**
   * With siteMaxRate: the batches whose latest grant held nothing but URLs of hosts that ask for
   * that delay (or more). The cap is lifted when none is left and a grant sends to a host that
   * asks for less: a source spanning hosts whose chunk listed the delayed host's URLs first.
   */
  crawlDelayHolders?: string[];
  /**
   * How long a grant has been taking to reach its fetch activity, learnt from reports (see
   * grantLead.ts); absent until the first report that carries one, and the configured lead applies.
   */
  dispatchMs?: number;
  /** What the store said when it last failed (shown while the source is held for it). */
  storeError?: string;
  /** Why robots.txt could not be read when last reported (shown while the source is held for it). */
  robotsError?: string;
  /** The site's whole quota when its rate-limit headers last said none was left (shown while the source is held for it; null: not said). */
  quotaLimit?: number | null;
  /**
   * The pace the site's quota allows, learnt when it was last spent with its size said: `limit`
   * requests each `cycleMs` (the time to send them at the rate then, and the wait until it
   * reset). `requestsAt`: the source's requests then; with twice the quota sent since and none
   * spent, it binds no more (the site raised it, or a lower rate keeps within it).
   */
  quotaPace?: { limit: number; cycleMs: number; requestsAt: number };
  /**
   * The last host of a source spanning several whose robots.txt could not be read while the
   * source went on with the others, and until when its URLs wait (shown until then).
   */
  robotsHostWait?: { error: string; untilMs: number };
  /** The latest host of the source whose Crawl-delay paced its URLs within a grant, and when that was reported. */
  hostCrawlDelay?: { origin: string; delayMs: number; atMs: number };
  /**
   * An operator paused the source during a temporary halt: its resume finishes that halt (the
   * rest of the cool-down, then the reduced rate) instead of ending it. Absent otherwise.
   */
  pausedWhileCooling?: boolean;
  /**
   * What last lowered the rate below the target (a 429/503, a rising TTFB, a temporary halt), and
   * when: the status says why a source runs slower than its target. Absent until the first.
   */
  slowedBy?: { by: string; atMs: number };
  /** Final outcomes that were pages, not images, since the last image (pageRun.ts). Absent until the first. */
  pagesSinceImage?: number;
  /**
   * Final outcomes that were pages, all told (content errors of the kind that halts a source, not
   * files sharp does not read): the "no image yet" note leaves them out. Absent until the first.
   */
  pages?: number;
  /**
   * Final content errors that an earlier crawl of a chunk recorded (reported with attempt 0 by
   * the batch that took the chunk up): not answers to this monitor, so no "no image yet" news.
   * Absent until the first.
   */
  contentBefore?: number;
}

export interface PolicyEvent {
  event: 'throttled' | 'cooling' | 'resumed' | 'halted' | 'latency-slowdown' | 'paused' | 'stopped' | 'rate-set' | 'catalogue-entry' | 'max-rate' | 'max-retry-after' | 'max-connections' | 'crawl-delay' | 'robots-unavailable' | 'store-unavailable' | 'quota-spent';
  detail: string;
}

export function emptyCounts(): Counts {
  return { done: 0, linkrot: 0, robots: 0, content: 0, refused: 0, error: 0, requests: 0, retries: 0 };
}

/** What a monitor's patches leave in effect for Governor.applyReport. */
export interface ReportPolicy {
  /** The latency baseline's old rule (latency.ts), for a monitor whose history was made with it. */
  latencyBySample?: boolean;
  /** Whether a report reaching a host with a shorter Crawl-delay may lift the cap (liftCrawlDelay). */
  liftCrawlDelay?: () => boolean;
  /** Whether a Crawl-delay's first wait counts from the windows already booked (applyCrawlDelay). */
  crawlDelayAfterBooked?: () => boolean;
  /** Whether large images' transfer times slow the source (DEFAULT_TRANSFER); asked only when a report has one. */
  watchDownloadSpeed?: () => boolean;
}

export class Governor {
  // Replaced, never changed in place: it may be DEFAULT_GOVERNOR itself.
  constructor(public readonly state: GovernorState, public cfg: GovernorConfig = DEFAULT_GOVERNOR) {}

  static create(source: string, sourceConfig: SourceConfig, nowMs: number, cfg: GovernorConfig = DEFAULT_GOVERNOR): Governor {
    const target = targetRate({ imageCount: sourceConfig.imageCount, explicitRate: sourceConfig.rate, globalCeiling: cfg.globalCeiling });
    return new Governor(
      {
        source,
        sourceConfig,
        catalogConfig: { ...sourceConfig },
        givenCeiling: cfg.globalCeiling ?? null,
        target,
        burst: sourceConfig.burst ?? 0,
        mode: 'running',
        coolingUntilMs: 0,
        haltReason: null,
        adaptive: newAdaptiveState(target, nowMs),
        latency: newLatencyState(),
        breaker: newBreakerState(),
        pacer: newPacerState(),
        counts: emptyCounts(),
        nextGrantId: 1,
      },
      cfg,
    );
  }

  get rate(): number {
    return this.state.adaptive.rate;
  }

  /** Feeds one batch report into the breaker, latency watch and adaptive rate. */
  applyReport(report: OutcomeReport, nowMs: number, { latencyBySample = false, liftCrawlDelay, crawlDelayAfterBooked, watchDownloadSpeed }: ReportPolicy = {}): PolicyEvent[] {
    const s = this.state;
    const events: PolicyEvent[] = [];
    let throttled = false;
    let lastPage: string | undefined; // the latest outcome counted as a page, named in a halt
    let lastFailure: string | undefined; // the latest failed request, named in a halt (a 403 wall, a timeout)
    let retryAfterMs = report.retryAfterMs;
    let throttledAt = nowMs;
    const throttleStatuses = new Set<number>();
    if (report.crawlDelayMs !== undefined && report.crawlDelayMs > 0) {
      events.push(this.applyCrawlDelay(report.crawlDelayMs, nowMs, crawlDelayAfterBooked?.() ? report.windowTail ?? null : undefined));
      this.holdsCrawlDelay(report.batchId, true);
    } else if (s.siteMaxRate !== undefined && report.leastHostDelayMs !== undefined && liftCrawlDelay?.()) {
      // Within a millisecond of the cap's delay is the capped host itself (1000 / (1000 / d)).
      const holds = report.leastHostDelayMs >= 1000 / s.siteMaxRate - 1;
      this.holdsCrawlDelay(report.batchId, holds);
      if (!holds && s.crawlDelayHolders!.length === 0) events.push(this.liftCrawlDelay(nowMs));
    }
    if (report.robotsRetryMs !== undefined && report.robotsRetryMs > 0 && nowMs + report.robotsRetryMs > s.adaptive.holdUntilMs) {
      // Nothing may be fetched until robots.txt has been read; the rate is not the site's problem here.
      holdUntil(s.adaptive, nowMs + report.robotsRetryMs, 'robots');
      s.robotsError = report.robotsError;
      // The hold says it for the whole source now.
      delete s.robotsHostWait;
      events.push({ event: 'robots-unavailable', detail: `robots.txt cannot be read${report.robotsError ? ` (${report.robotsError})` : ''}; asked again in ${Math.round(report.robotsRetryMs / 1000)} s, nothing sent until then` });
    }
    // No event: it holds nothing, and the worker logs each failed read (robots-unavailable).
    if (report.robotsHostWait) s.robotsHostWait = { error: report.robotsHostWait.error, untilMs: report.robotsHostWait.retryAtMs };
    if (report.hostCrawlDelay) s.hostCrawlDelay = { origin: report.hostCrawlDelay.origin, delayMs: report.hostCrawlDelay.delayMs, atMs: nowMs };
    if (report.storeRetryMs !== undefined && report.storeRetryMs > 0) {
      // Images that cannot be kept are not downloaded; nor is this the site's doing: the rate stays.
      s.storeError = report.storeError ?? 'the store failed';
      if (nowMs + report.storeRetryMs > s.adaptive.holdUntilMs) {
        holdUntil(s.adaptive, nowMs + report.storeRetryMs, 'store');
        events.push({ event: 'store-unavailable', detail: `the store failed (${s.storeError}); nothing sent for ${Math.round(report.storeRetryMs / 1000)} s, the URLs keep their attempts` });
      }
    }
    // Not a refusal: the site said how many requests it takes and that none is left until its
    // quota resets. The rate stays (within the quota the site takes it); nothing goes until then.
    if (report.quotaHoldMs !== undefined && report.quotaHoldMs > 0 && report.retryAfterMs === undefined && nowMs + report.quotaHoldMs > s.adaptive.holdUntilMs) {
      holdUntil(s.adaptive, nowMs + report.quotaHoldMs, 'quota');
      s.quotaLimit = report.quotaLimit ?? null;
      if (report.quotaLimit !== undefined && report.quotaLimit > 0 && s.adaptive.rate > 0) {
        s.quotaPace = { limit: report.quotaLimit, cycleMs: (report.quotaResetMs ?? report.quotaHoldMs) + (report.quotaLimit * 1000) / s.adaptive.rate, requestsAt: s.counts.requests };
      }
      events.push({ event: 'quota-spent', detail: `the site's rate-limit headers say ${quotaText({ ...(report.quotaLimit !== undefined ? { limit: report.quotaLimit } : {}) })}; nothing sent for ${Math.round(report.quotaHoldMs / 1000)} s, ${report.quotaResetMs !== undefined ? `the longest Retry-After honoured (its quota resets in ${Math.round(report.quotaResetMs / 1000)} s)` : 'until its quota resets'}` });
    }
    for (const o of report.outcomes) {
      if (o.final) s.counts[o.cls] += 1;
      else s.counts.retries += 1;
      if (o.final && o.cls === 'content' && o.page) s.pages = (s.pages ?? 0) + 1;
      if (o.final && o.cls === 'content' && o.attempt === 0) s.contentBefore = (s.contentBefore ?? 0) + 1;
      const pages = pagesSinceImage(s.pagesSinceImage ?? 0, o);
      if (pages !== (s.pagesSinceImage ?? 0)) {
        s.pagesSinceImage = pages;
        if (pages > 0) lastPage = o.reason;
      }
      if (o.sent) s.counts.requests += 1;
      const sample = healthSample(o.cls, o.sent, o.repeat === true);
      if (sample === 'repeat') recordRepeat(s.breaker, this.cfg.breaker);
      else if (sample !== 'none') recordSample(s.breaker, nowMs, sample === 'error', this.cfg.breaker);
      if (sample === 'error' || sample === 'repeat') lastFailure = o.reason;
      if (o.ttfbMs !== undefined && o.cls !== 'error') recordTtfb(s.latency, o.ttfbMs, this.cfg.latency, latencyBySample);
      if (o.msPerMib !== undefined && o.cls !== 'error' && (watchDownloadSpeed?.() ?? true)) recordTtfb(s.transfer ??= newLatencyState(), o.msPerMib, DEFAULT_TRANSFER);
      if (isThrottle(o.status)) {
        throttled = true;
        throttleStatuses.add(o.status!);
        if (o.atMs !== undefined) throttledAt = Math.max(throttledAt, o.atMs);
        if (o.retryAfterMs !== undefined) retryAfterMs = Math.max(retryAfterMs ?? 0, o.retryAfterMs);
      }
    }
    if (throttled || report.retryAfterMs !== undefined) {
      onThrottle(s.adaptive, s.target, throttledAt, retryAfterMs, this.cfg.adaptive);
      events.push({ event: 'throttled', detail: `rate ${fmt(s.adaptive.rate)}/s, hold ${Math.round((s.adaptive.holdUntilMs - nowMs) / 1000)} s` });
      const answered = throttleStatuses.size ? `a ${[...throttleStatuses].sort().join(' and ')}` : 'a 429 or 503';
      // A Retry-After past the longest honoured is held only that long: saying just the site's
      // figure (a day) read as a day's slowdown in a note that also says when it is back.
      const longest = this.cfg.adaptive.maxRetryAfterMs;
      // A wait read as the longest read was a day or more (a week, say): not "86400 s".
      const askedS = retryAfterMs !== undefined && retryAfterMs >= RETRY_AFTER_READ_CAP_MS ? 'a day or more' : `${Math.round((retryAfterMs ?? 0) / 1000)} s`;
      const asked = retryAfterMs === undefined ? '' : ` (Retry-After ${askedS}${retryAfterMs > longest ? `; held ${Math.round(longest / 1000)} s, the longest honoured` : ''})`;
      s.slowedBy = { by: `${answered}${asked}`, atMs: throttledAt };
    }
    const judge = !throttled && report.retryAfterMs === undefined;
    const ttfb = this.slowedFor(s.latency, this.cfg.latency, judge, nowMs, !latencyBySample);
    // The download-speed watch: a site whose downloads slow down as we add them (its uplink
    // full) answers its first bytes at once.
    const transfer = !ttfb && s.transfer ? this.slowedFor(s.transfer, DEFAULT_TRANSFER, judge, nowMs) : undefined;
    if (ttfb) {
      s.slowedBy = { by: `its TTFB (median ${Math.round(ttfb.medianMs)} ms against a baseline of ${Math.round(ttfb.baselineMs)} ms)`, atMs: nowMs };
      events.push({ event: 'latency-slowdown', detail: `median ttfb above ${this.cfg.latency.factor}x baseline ${Math.round(ttfb.baselineMs)} ms; rate ${fmt(s.adaptive.rate)}/s` });
    } else if (transfer) {
      s.slowedBy = { by: `its downloads' speed (median ${speedText(transfer.medianMs)} against a baseline of ${speedText(transfer.baselineMs)})`, atMs: nowMs };
      events.push({ event: 'latency-slowdown', detail: `median download speed below a third of its baseline ${speedText(transfer.baselineMs)}; rate ${fmt(s.adaptive.rate)}/s` });
    }
    if (s.mode === 'running' || s.mode === 'cooling') {
      if (shouldHalt(s.breaker, this.cfg.breaker)) {
        s.mode = 'halted';
        s.haltReason = `the last ${this.cfg.breaker.consecutiveForHalt} requests all failed${lastFailure ? ` (the last: ${lastFailure})` : ''}`;
        events.push({ event: 'halted', detail: s.haltReason });
      } else if ((s.pagesSinceImage ?? 0) >= PAGES_FOR_HALT) {
        s.mode = 'halted';
        s.haltReason = pagesHaltReason(s.counts.done, lastPage);
        events.push({ event: 'halted', detail: s.haltReason });
      } else if (s.mode === 'running' && shouldCoolDown(s.breaker, nowMs, this.cfg.breaker)) {
        const { requests, errors } = windowCounts(s.breaker, nowMs, this.cfg.breaker);
        s.mode = 'cooling';
        s.coolingUntilMs = nowMs + this.cfg.breaker.coolDownMs;
        clearWindow(s.breaker);
        events.push({ event: 'cooling', detail: `${errors}/${requests} requests failed in the last ${this.cfg.breaker.windowMs / 1000} s` });
        s.slowedBy = { by: `a temporary halt (${errors}/${requests} requests failed in ${this.cfg.breaker.windowMs / 1000} s)`, atMs: nowMs };
      }
    }
    return events;
  }

  /** Time-driven transitions: end of a temporary halt, the additive ramp. */
  tick(nowMs: number): PolicyEvent[] {
    const s = this.state;
    const events: PolicyEvent[] = [];
    if (s.mode === 'cooling' && nowMs >= s.coolingUntilMs) {
      s.mode = 'running';
      reduceTo(s.adaptive, s.target, this.cfg.resumeShare, nowMs, this.cfg.adaptive);
      events.push({ event: 'resumed', detail: `after temporary halt at ${fmt(s.adaptive.rate)}/s` });
    }
    if (s.mode === 'running') ramp(s.adaptive, s.target, nowMs, this.cfg.adaptive);
    else s.adaptive.lastRampMs = nowMs;
    if (s.slowedBy && s.adaptive.rate >= s.target) delete s.slowedBy;
    return events;
  }

  /** The pace the site's quota allows (GovernorState.quotaPace), while it still binds. */
  quotaPace(): { limit: number; everyS: number } | null {
    const q = this.state.quotaPace;
    if (!q || this.state.counts.requests - q.requestsAt > 2 * q.limit) return null;
    return { limit: q.limit, everyS: Math.max(1, Math.round(q.cycleMs / 1000)) };
  }

  canGrant(nowMs: number): boolean {
    return this.state.mode === 'running' && !isHeld(this.state.adaptive, nowMs);
  }

  windowMs(): number {
    return windowLengthMs(this.rate);
  }

  /** Windows are paced a margin below the rate. */
  private pacedRate(): number {
    return this.rate * (1 - this.cfg.pacingMargin);
  }

  /** Time between two slots of the next window. */
  slotIntervalMs(): number {
    return 1000 / this.pacedRate();
  }

  /** No grant has been planned for the source yet. */
  isFirstWindow(): boolean {
    return this.state.nextGrantId === 1;
  }

  /** How far ahead of now the next window starts. */
  leadMs(): number {
    return grantLeadMs(this.cfg.grantLeadMs, this.state.dispatchMs);
  }

  /** A fetch activity took this long to start after its grant was issued. */
  noteDispatch(ms: number): void {
    this.state.dispatchMs = learnDispatch(this.state.dispatchMs, ms);
  }

  /**
   * When the next window should be planned: early enough for the batch to start in time, and at
   * least a lead before the timeline frees up, so that a long lead leaves no gap between windows.
   */
  nextPlanAtMs(): number {
    const lookahead = Math.max(Math.min(this.windowMs() / 2, 2_000), this.leadMs());
    return this.state.pacer.nextFreeMs - lookahead;
  }

  /**
   * A grant's activity has returned, its last request in the slot at `lastSendMs`: when no window
   * was planned after the grant's, the next may open one spacing after that slot instead of at
   * the grant's end. Otherwise a grant with slots to spare (a last window's, or one whose URLs ran
   * out) kept the source idle to its end while the URLs it handed back waited for a new grant
   * (measured: 4-5 s of a 1 req/s source's 33 s crawl). The next window is then as far from the
   * last request as from the previous window's last slot: the ceilings hold as between windows.
   */
  reclaimWindowTail(windowEndMs: number, lastSendMs: number): boolean {
    const pacer = this.state.pacer;
    if (pacer.nextFreeMs !== windowEndMs) return false;
    const freeFromMs = lastSendMs + this.slotIntervalMs();
    // Less than a millisecond is float rounding of the last slot's time, not a free slot.
    if (!(freeFromMs < pacer.nextFreeMs - 1)) return false;
    pacer.nextFreeMs = freeFromMs;
    return true;
  }

  /**
   * Keeps the timeline free for `floatMs` after a window that ends where the source's booking
   * ends (the last planned), so that its grant may slide that much later (Grant.floatMs). False,
   * and nothing booked, for any other window: the window after it would be in the way.
   */
  bookFloat(windowEndMs: number, floatMs: number): boolean {
    const pacer = this.state.pacer;
    if (floatMs <= 0 || pacer.nextFreeMs !== windowEndMs) return false;
    pacer.nextFreeMs += floatMs;
    return true;
  }

  /**
   * Whether `slots` fit in one usual window (stretched by `stretch`, as plan lays it out). A
   * source whose whole work fits needs no short first window: it is done by the time a short
   * window's report would have come back, and a second grant would only add a trip through a
   * busy worker in the middle of its crawl.
   */
  fitsInOneWindow(slots: number, stretch = 1): boolean {
    return slots <= Math.floor(this.usualWindowMs(stretch) / this.slotIntervalMs());
  }

  /** The length of a window that is not a source's first (see windowLengthMs, windowStretch). */
  private usualWindowMs(stretch: number): number {
    return stretchedWindowMs(windowLengthMs(this.pacedRate()), stretch);
  }

  /** The next moment something time-driven changes (hold ends, cooling ends). */
  nextTimedChangeMs(nowMs: number): number | undefined {
    const s = this.state;
    const candidates: number[] = [];
    if (s.adaptive.holdUntilMs > nowMs) candidates.push(s.adaptive.holdUntilMs);
    if (s.mode === 'cooling') candidates.push(s.coolingUntilMs);
    return candidates.length ? Math.min(...candidates) : undefined;
  }

  /**
   * `stretch`: the window is that many times its usual length (see windowStretch). `shortFirst`:
   * the source's first window is at most FIRST_WINDOW_MS. `leadMs`: this window's lead, when not leadMs().
   * `probe`: this window is at most PROBE_WINDOW_MS (its report is wanted soon).
   */
  plan(wants: readonly Want[], nowMs: number, stretch = 1, shortFirst = false, leadMs = this.leadMs(), probe = false): (PlannedGrant & { grantId: number })[] {
    if (!this.canGrant(nowMs)) return [];
    const paced = this.pacedRate();
    const usual = this.usualWindowMs(stretch);
    const planned = planWindow(
      this.state.pacer,
      { nowMs, rate: paced, burst: this.state.burst, leadMs, windowMs: probe ? Math.min(usual, PROBE_WINDOW_MS) : shortFirst && this.isFirstWindow() ? Math.min(usual, FIRST_WINDOW_MS) : usual },
      wants,
    );
    return planned.map((g) => ({ ...g, grantId: this.state.nextGrantId++ }));
  }

  /** Halts the source for an operator, as the breaker does: `resume` lifts it. */
  halt(reason: string): PolicyEvent[] {
    const s = this.state;
    if (s.mode !== 'running' && s.mode !== 'cooling') return [];
    s.mode = 'halted';
    s.haltReason = reason;
    return [{ event: 'halted', detail: reason }];
  }

  /**
   * `keepTemporaryHalt` (false only when replaying a history from before it): a pause during a
   * temporary halt is remembered, so that resume finishes the halt instead of ending it.
   */
  pause(keepTemporaryHalt = true): PolicyEvent {
    const s = this.state;
    if (keepTemporaryHalt && s.mode === 'cooling') s.pausedWhileCooling = true;
    if (s.mode !== 'stopped') s.mode = 'paused';
    return { event: 'paused', detail: 'by operator' };
  }

  /**
   * Lifts an operator's pause, or a permanent halt (the operator's call: the breaker starts
   * afresh). A temporary halt is the site's, not the operator's: with `keepTemporaryHalt` it
   * runs its course (no requests until its end, then the reduced rate), also across a pause,
   * and a source that was not halted keeps its breaker's counts. Without it (histories from
   * before it) `crawl pause --all` then `crawl resume --all` ended every temporary halt and
   * wiped every source's error window.
   */
  resume(nowMs: number, rate?: number, keepTemporaryHalt = true): PolicyEvent {
    const s = this.state;
    if (rate !== undefined) this.setRate(rate, undefined, nowMs);
    const halted = s.haltReason !== null;
    const cooling = keepTemporaryHalt && !halted && (s.mode === 'cooling' || s.pausedWhileCooling === true);
    delete s.pausedWhileCooling;
    s.adaptive.lastRampMs = nowMs;
    if (!keepTemporaryHalt || halted) {
      s.haltReason = null;
      clearRun(s.breaker);
      clearWindow(s.breaker);
      // The operator has seen the pages: another run as long halts it again.
      delete s.pagesSinceImage;
    }
    if (s.mode === 'stopped') return { event: 'resumed', detail: `by operator at ${fmt(s.adaptive.rate)}/s` };
    if (cooling && s.coolingUntilMs > nowMs) {
      s.mode = 'cooling'; // tick() ends it, at the reduced rate
      return { event: 'resumed', detail: `by operator; the temporary halt goes on until ${new Date(s.coolingUntilMs).toISOString()}` };
    }
    // The halt's end passed during the pause: the source goes on as that end would have let it
    // (an operator's explicit rate stands as given).
    if (cooling && rate === undefined) reduceTo(s.adaptive, s.target, this.cfg.resumeShare, nowMs, this.cfg.adaptive);
    s.mode = 'running';
    return { event: 'resumed', detail: `by operator at ${fmt(s.adaptive.rate)}/s` };
  }

  /**
   * The site's robots.txt asks for this long between requests (a fetch activity found our
   * grants closer together and went on at the site's pace): the rate goes down to it at once and
   * the target stays at or below it, with no burst, since a burst is requests closer together
   * than the rate.
   */
  applyCrawlDelay(delayMs: number, nowMs: number, afterBooked?: { endMs: number; lastSendMs: number } | null): PolicyEvent {
    const s = this.state;
    const limit = 1000 / delayMs;
    // The next request waits the delay after the last one that may have gone. That is the
    // reporting activity's, at most now; with `afterBooked` (its window's tail, or null: none
    // sent) also any in the windows booked after it at the faster spacing, which other batches
    // may still be sending in, at their hosts' pace: a new source's first window, shared by three
    // batches, was followed at the capped rate 308 ms after a request to the same host.
    const lastBookedMs = afterBooked === undefined ? nowMs
      : afterBooked !== null && s.pacer.nextFreeMs === afterBooked.endMs ? afterBooked.lastSendMs
        : s.pacer.nextFreeMs;
    holdUntil(s.adaptive, Math.max(nowMs, lastBookedMs) + delayMs, 'crawl-delay');
    s.siteMaxRate = limit;
    s.target = Math.min(s.target, limit);
    s.adaptive.rate = Math.min(s.adaptive.rate, limit);
    s.burst = 0;
    return { event: 'crawl-delay', detail: `robots.txt asks for ${Math.round(delayMs) / 1000} s between requests: rate at most ${fmt(limit)}/s, no burst` };
  }

  /** Whether a batch's latest grant held only URLs of hosts that ask for the capped delay or more. */
  private holdsCrawlDelay(batchId: string, holds: boolean): void {
    const rest = (this.state.crawlDelayHolders ?? []).filter((b) => b !== batchId);
    this.state.crawlDelayHolders = holds ? [...rest, batchId] : rest;
  }

  /** A batch has ended: its grants hold the source to a Crawl-delay no longer. */
  batchEnded(batchId: string): void {
    if (this.state.crawlDelayHolders?.includes(batchId)) this.holdsCrawlDelay(batchId, false);
  }

  /**
   * No batch holds only the delayed host's URLs any more, and one sent to a host that asks for
   * less: the cap goes. A grant left with only a delayed host's URLs at the faster rate sends
   * at that host's pace and brings it back (applyCrawlDelay), so this is safe whatever the other
   * hosts ask.
   * The other hosts start at the target, as a new source does: nothing has slowed them, and a
   * ramp from the cap (180 s to full) took longer than their URLs at full rate (500 at 10/s).
   */
  private liftCrawlDelay(nowMs: number): PolicyEvent {
    const s = this.state;
    const before = s.siteMaxRate!;
    delete s.siteMaxRate;
    delete s.crawlDelayHolders;
    s.burst = s.sourceConfig.burst ?? 0;
    s.target = this.sourceTarget();
    // Unless something else slowed it meanwhile (a 429, a temporary halt): then it ramps as usual.
    const atCap = s.mode === 'running' && !isHeld(s.adaptive, nowMs) && s.adaptive.rate >= before * 0.999;
    if (atCap) s.adaptive.rate = s.target;
    s.adaptive.lastRampMs = nowMs;
    return { event: 'crawl-delay', detail: `the source's grants reach hosts without that Crawl-delay again: at most ${fmt(before)}/s no longer, ${atCap ? 'back to' : 'ramping up to'} ${fmt(s.target)}/s` };
  }

  /** An operator's explicit rate becomes the target and the current rate at once. */
  setRate(rate: number, burst: number | undefined, nowMs: number): PolicyEvent {
    const s = this.state;
    s.sourceConfig = { ...s.sourceConfig, rate, ...(burst !== undefined ? { burst } : {}) };
    s.target = this.sourceTarget();
    s.adaptive.rate = s.target;
    s.adaptive.lastRampMs = nowMs;
    if (burst !== undefined && s.siteMaxRate === undefined) s.burst = burst;
    return { event: 'rate-set', detail: `target ${fmt(s.target)}/s burst ${s.burst}` };
  }

  /**
   * The source's catalogue entry, given again with more work (`crawl start`, or `crawl run` of an
   * OUT whose crawl is still going): an entry changed since the one the source last had is the
   * operator's new word and replaces its config, as an explicit rate does, a lower target at once
   * and a higher one by the ramp. An unchanged entry leaves alone what an operator set since
   * (crawl set-rate). Before, a running monitor kept its first entry: a site whose rate an
   * operator lowered in the catalogue went on at the old one without a word.
   */
  takeCatalogEntry(entry: SourceConfig, nowMs: number): PolicyEvent | undefined {
    const s = this.state;
    if (sameConfig(entry, s.catalogConfig ?? s.sourceConfig)) return undefined;
    const before = s.target;
    const given = { ...entry };
    s.catalogConfig = given;
    s.sourceConfig = { ...given };
    s.target = this.sourceTarget();
    if (s.siteMaxRate === undefined) s.burst = given.burst ?? 0;
    if (s.adaptive.rate > s.target) s.adaptive.rate = s.target;
    else if (s.adaptive.rate < s.target * 0.999 && !s.slowedBy) s.slowedBy = { by: `its catalogue entry's earlier ${fmt(before)}/s`, atMs: nowMs };
    s.adaptive.lastRampMs = nowMs;
    return { event: 'catalogue-entry', detail: `changed to ${configText(given)}: target ${fmt(s.target)}/s, burst ${s.burst} (was ${fmt(before)}/s)` };
  }

  /**
   * One latency watch (TTFB, or download speed) at a report: whether it slowed the source, with
   * the median and baseline it judged by. Judged against the baseline before it learns from these
   * samples; learnt from before a slowdown clears them, so a site that stays slower is learnt all
   * the same. `judge`: no 429 or 503 came with the report (they slow the source themselves).
   */
  private slowedFor(watch: LatencyState, cfg: LatencyConfig, judge: boolean, nowMs: number, learn = true): { medianMs: number; baselineMs: number } | undefined {
    const elevated = judge && latencyElevated(watch, cfg);
    const baselineMs = watch.baselineMs ?? 0;
    const medianMs = elevated ? median(watch.recent) : 0;
    if (learn) learnBaseline(watch, nowMs, cfg);
    if (!elevated || !onLatencyElevated(this.state.adaptive, this.state.target, nowMs, this.cfg.adaptive)) return undefined;
    resetRecent(watch);
    return { medianMs, baselineMs };
  }

  /**
   * The cap on the Retry-After honoured that came with more work (`--max-retry-after`), taken
   * when it differs from the one the source was last given, so an unchanged one leaves a `crawl
   * set-max-retry-after` made since in place. Before, only a monitor a command started took it:
   * a source held for a site's hour-long Retry-After stayed held when the crawl was started again
   * with a cap of two minutes.
   */
  takeMaxRetryAfter(ms: number, nowMs: number): PolicyEvent | undefined {
    const s = this.state;
    const last = s.givenMaxRetryAfterMs ?? this.cfg.adaptive.maxRetryAfterMs;
    if (ms === last) return undefined;
    s.givenMaxRetryAfterMs = ms;
    return this.setMaxRetryAfter(ms, nowMs, '--max-retry-after changed to');
  }

  /**
   * An operator's limit on the requests a worker keeps open to the source's site at once (`crawl
   * set-max-connections`; null lifts it), as set-rate is to the rate: a later catalogue entry
   * unchanged from the one the source was given leaves it in place.
   */
  setMaxConnections(n: number | null): PolicyEvent {
    const s = this.state;
    const before = s.sourceConfig.maxConnections;
    const { maxConnections: _dropped, ...rest } = s.sourceConfig;
    s.sourceConfig = n === null ? rest : { ...rest, maxConnections: n };
    return { event: 'max-connections', detail: `${n === null ? 'no limit of its own on' : `at most ${n}`} requests open at once (was ${before ?? 'none'})` };
  }

  /**
   * A new cap on the Retry-After honoured for a crawl already running (`crawl
   * set-max-retry-after`): a Retry-After hold that would outlast it counted from now ends then.
   */
  setMaxRetryAfter(ms: number, nowMs: number, how = 'longest Retry-After honoured set to'): PolicyEvent {
    const s = this.state;
    const before = this.cfg.adaptive.maxRetryAfterMs;
    s.givenMaxRetryAfterMs ??= before;
    this.cfg = { ...this.cfg, adaptive: { ...this.cfg.adaptive, maxRetryAfterMs: ms } };
    const shortened = capRetryAfter(s.adaptive, ms, nowMs);
    return { event: 'max-retry-after', detail: `${how} ${Math.round(ms / 1000)} s (was ${Math.round(before / 1000)} s)${shortened ? `; the Retry-After hold now ends at ${new Date(s.adaptive.holdUntilMs).toISOString()}` : ''}` };
  }

  /**
   * The global ceiling a later `crawl start` or `crawl run` gives (`--max-rate`), taken as a
   * changed catalogue entry is: when it differs from the one the source was last given, as `crawl
   * set-max-rate` would set it; an unchanged one leaves a set-max-rate made since in place.
   */
  takeGivenCeiling(ceiling: number, nowMs: number): PolicyEvent | undefined {
    const s = this.state;
    const last = s.givenCeiling !== undefined ? s.givenCeiling : this.cfg.globalCeiling ?? null;
    if (ceiling === last) return undefined;
    s.givenCeiling = ceiling;
    const set = this.setCeiling(ceiling, nowMs);
    return { event: 'max-rate', detail: `--max-rate changed to ${fmt(ceiling)}/s (was ${last === null ? 'none' : `${fmt(last)}/s`}): ${set.detail}` };
  }

  /**
   * A new global ceiling (undefined: none) for a crawl already running: the target is worked
   * out again from the source's own rate under it. A lower ceiling applies at once; under a
   * higher one the rate ramps up to the new target as after a back-off.
   */
  setCeiling(ceiling: number | undefined, nowMs: number): PolicyEvent {
    const s = this.state;
    const before = this.cfg.globalCeiling;
    this.cfg = { ...this.cfg, globalCeiling: ceiling };
    s.target = this.sourceTarget();
    s.adaptive.rate = Math.min(s.adaptive.rate, s.target);
    s.adaptive.lastRampMs = nowMs;
    // A raised ceiling lifts the target at once and the rate by the ramp.
    if (before !== undefined && s.adaptive.rate < s.target) s.slowedBy = { by: `the global ceiling of ${fmt(before)}/s before`, atMs: nowMs };
    return { event: 'rate-set', detail: `global ceiling ${ceiling === undefined ? 'none' : `${fmt(ceiling)}/s`}; target ${fmt(s.target)}/s` };
  }

  /** The source's own target (its explicit rate, else from its size) under the global ceiling and the site's Crawl-delay. */
  private sourceTarget(): number {
    const { sourceConfig, siteMaxRate } = this.state;
    return Math.min(targetRate({ imageCount: sourceConfig.imageCount, explicitRate: sourceConfig.rate, globalCeiling: this.cfg.globalCeiling }), siteMaxRate ?? Infinity);
  }

  stop(): PolicyEvent {
    this.state.mode = 'stopped';
    return { event: 'stopped', detail: 'by operator' };
  }
}

/** Stretched for missed slots, but never past a minute unless the rate's own window is longer. */
function stretchedWindowMs(windowMs: number, stretch: number): number {
  return Math.min(Math.max(windowMs, 60_000), windowMs * Math.max(1, stretch));
}

/** A transfer time per MiB as a speed. */
function speedText(msPerMib: number): string {
  const kibPerS = msPerMib > 0 ? (1024 * 1000) / msPerMib : Infinity;
  return kibPerS >= 1024 ? `${(kibPerS / 1024).toFixed(1)} MiB/s` : `${Math.round(kibPerS)} KiB/s`;
}

/**
 * A rate in an event's text. Below 0.01/s, two significant digits: two decimals showed a
 * catalogue's 0.0001/s (a request every few hours) as 0.00/s, read as a source that sends nothing.
 */
function fmt(n: number): string {
  if (n >= 10) return n.toFixed(0);
  if (n >= 0.01 || n <= 0) return n.toFixed(2);
  return String(Number(n.toPrecision(2)));
}

function sameConfig(a: SourceConfig, b: SourceConfig): boolean {
  return a.imageCount === b.imageCount && a.rate === b.rate && a.burst === b.burst && a.maxConnections === b.maxConnections;
}

function configText(c: SourceConfig): string {
  const parts = [c.rate !== undefined ? `rate ${c.rate}` : null, c.imageCount !== undefined ? `imageCount ${c.imageCount}` : null, c.burst !== undefined ? `burst ${c.burst}` : null,
    c.maxConnections !== undefined ? `maxConnections ${c.maxConnections}` : null];
  return parts.filter((p) => p !== null).join(', ') || 'no rate: from the source\'s size';
}
