import type { OpenLimitHint } from '../shared/types';
import { median } from './latency';

/**
 * How many downloads one site gets from a worker at once, learnt from what each added one buys.
 *
 * A site whose uplink is its bottleneck answers the first byte at once and shares the link among
 * the downloads open: at 5 requests a second against a link that bears 2 images a second, the
 * worker kept its 64 connections (CRAWL_MAX_CONNECTIONS_PER_SITE) busy at the site for the whole
 * crawl, each download taking 31 s instead of half a second, and the monitor's rate watches,
 * judging reports a grant's window late, swung between the link's rate and twice it (session 63).
 *
 * Here a worker counts its own open downloads per origin and judges each large body's transfer
 * time per MiB as it ends (no window's delay). When, with three or more open on average, they take
 * several times as long as the fastest one seen, the link is taken to be full: the site is held
 * to the number its link carries at the fastest speed, plus one so that it never idles between
 * two downloads. That first estimate is rough (the fastest download seen may not have had the link
 * to itself), so from then on the limit is probed a quarter (at least one) either way, in turn:
 * - more is kept when the added downloads bought at least half the throughput they would on a
 *   link of their own (a site fast per connection, a CDN, climbs back to no limit);
 * - fewer is kept when they carry nine tenths of the throughput (a full link comes down to the
 *   fewest downloads that fill it, two at the least).
 */

export interface OpenLimitConfig {
  /** Samples (large bodies ended) since the last change needed to judge. */
  judgeSamples: number;
  /** Least time at a limit before it is judged again. */
  settleMs: number;
  /** Time at a limit a probe came back to before probing again. */
  holdMs: number;
  /** Fewer downloads are kept when they carry this share of the throughput. */
  keepShare: number;
  /** The median transfer time must be this many times the fastest... */
  slowFactor: number;
  /**
   * ...or this many times, while the site has its start (startOpen): there the fastest download
   * shared the link with a few sent just after it, and the few open are no loss if it was wrong
   * (a site slow per connection climbs back by the probes).
   */
  startSlowFactor: number;
  /** ...and this much slower per MiB (below 1 MiB/s), so that a busy worker reading late is not a full link. */
  minExcessMsPerMib: number;
  /** Downloads open on average before a limit is set: with fewer, there is nothing to take away. */
  minOpen: number;
  /** The least limit: one download at a time would leave the link idle between two. */
  floor: number;
  /**
   * Downloads open at once to a site that answers with large bodies, before any judgement: it
   * doubles each time that many were open and did not slow. 0: the worker's own cap.
   */
  startOpen: number;
  /**
   * A start neither doubled nor ended (downloads slower than the fastest, by less than the least
   * excess) for this long takes what each download gets now as the speed to keep: the fastest
   * was likely a fluke, and without it a site that bears more would stay at the start for good.
   */
  undecidedMs: number;
  /** The worker's own cap per site: a limit probed up to it is dropped. */
  max: number;
}

export const DEFAULT_OPEN_LIMIT: Omit<OpenLimitConfig, 'max'> = {
  judgeSamples: 6, settleMs: 10_000, holdMs: 60_000, keepShare: 0.9, slowFactor: 3, minExcessMsPerMib: 1_000, minOpen: 3, floor: 2, startOpen: 8, startSlowFactor: 1.5, undecidedMs: 60_000,
};

export interface OpenSample {
  msPerMib: number;
  /** The most downloads open at the origin (this one included) while it transferred. */
  open: number;
  /** When its request went out: one sent before the limit last changed tells of the limit before. */
  sentAtMs: number;
}

export interface OpenLimitState {
  fastestMsPerMib: number | null;
  /** Samples since the limit last changed (the newest 4 x judgeSamples). */
  samples: OpenSample[];
  /** null: none learnt (the worker's own cap). */
  limit: number | null;
  changedAtMs: number;
  /** Not judged again before this (a probe that gained nothing holds the limit longer). */
  judgeAfterMs: number;
  /** While probing: the limit probed from and its throughput (MiB/s across its open downloads). */
  probe?: { from: number; mibPerS: number };
  /** The way the next probe from a settled limit goes. */
  nextProbe: 'up' | 'down';
  /** `limit` is the start (startOpen, doubled while downloads kept their speed), not a judgement. */
  starting?: true;
  /** Since when the start has been judged neither to double nor to end. */
  undecidedSinceMs?: number;
}

export type OpenLimitChange =
  | { kind: 'limited'; limit: number; medianMsPerMib: number; fastestMsPerMib: number; open: number }
  /** Taken from what the source's monitor last heard (OpenLimitHint), before any judgement of the worker's own. */
  | { kind: 'taken'; limit: number; fastestMsPerMib: number }
  /** `mibPerS`: the throughput at the limit before (probes) or kept (back, started). */
  | { kind: 'probe-up' | 'probe-down' | 'back' | 'lowered' | 'started'; limit: number; mibPerS: number }
  | { kind: 'lifted'; mibPerS: number }
  /** The site refused (503, 429) a request sent with `limit` others open (pipeline/siteDownloads.ts). */
  | { kind: 'refused'; limit: number; status: number; forMs: number }
  /** Another worker's refusal hold, from the source's monitor (RefusalHint). */
  | { kind: 'refusal-taken'; limit: number; forMs: number };

/** Every download counts towards the first judgement, those sent before the state was made too. */
export function newOpenLimitState(): OpenLimitState {
  return { fastestMsPerMib: null, samples: [], limit: null, changedAtMs: -Infinity, judgeAfterMs: -Infinity, nextProbe: 'down' };
}

/**
 * For a site seen to answer with a large body: a few downloads at once to begin with. Before it,
 * a site whose link was full had 41 of the worker's requests open by the time six downloads had
 * ended to judge it by (5 a second, session 64); a site that bears more gets twice as many each
 * time that many kept their speed (six downloads), up to the worker's own cap.
 */
export function startingOpenLimitState(cfg: Pick<OpenLimitConfig, 'startOpen' | 'max'>): OpenLimitState {
  const s = newOpenLimitState();
  if (cfg.startOpen > 0 && cfg.startOpen < cfg.max) {
    s.limit = cfg.startOpen;
    s.starting = true;
  }
  return s;
}

/** What the state says of the site for other workers: undefined until it has judged (set a limit). */
export function hintOf(s: OpenLimitState): OpenLimitHint | undefined {
  if (s.starting || s.changedAtMs === -Infinity || s.fastestMsPerMib === null) return undefined;
  return { limit: s.limit, fastestMsPerMib: Math.round(s.fastestMsPerMib) };
}

/**
 * Takes up another worker's limit (or this one's, before it restarted) when this worker has not
 * judged the site itself: without it each worker sent its full cap until six of its own downloads
 * had ended (41 open at 5/s against a 1 MB/s link, session 64). It is judged and probed from
 * there as a limit of the worker's own; a worker's own judgement is never replaced.
 */
export function takeHint(s: OpenLimitState, hint: OpenLimitHint, nowMs: number, cfg: OpenLimitConfig): OpenLimitChange | undefined {
  if ((s.changedAtMs !== -Infinity && !s.starting) || hint.limit === null || hint.limit >= cfg.max || !(hint.fastestMsPerMib > 0) || cfg.max - 1 < cfg.floor) return undefined;
  const limit = Math.min(cfg.max - 1, Math.max(cfg.floor, Math.floor(hint.limit)));
  delete s.starting;
  s.fastestMsPerMib = Math.min(s.fastestMsPerMib ?? Infinity, hint.fastestMsPerMib);
  set(s, limit, nowMs, cfg.settleMs);
  return { kind: 'taken', limit, fastestMsPerMib: Math.round(s.fastestMsPerMib) };
}

/** Takes in one large body's transfer; returns the limit's change, if it made one. */
export function noteDownload(s: OpenLimitState, sample: OpenSample, nowMs: number, cfg: OpenLimitConfig): OpenLimitChange | undefined {
  s.fastestMsPerMib = Math.min(s.fastestMsPerMib ?? Infinity, sample.msPerMib);
  if (sample.sentAtMs < s.changedAtMs) return undefined;
  s.samples.push(sample);
  if (s.samples.length > 4 * cfg.judgeSamples) s.samples.shift();
  // A worker whose own cap is already at the floor (CRAWL_MAX_CONNECTIONS_PER_SITE=2) has nothing to learn.
  if (s.samples.length < cfg.judgeSamples || nowMs < s.judgeAfterMs || cfg.max - 1 < cfg.floor) return undefined;
  const m = median(s.samples.map((x) => x.msPerMib));
  const open = s.samples.reduce((a, x) => a + x.open, 0) / s.samples.length;
  const fastest = s.fastestMsPerMib;
  const mibPerS = (open * 1_000) / Math.max(1, m);
  const slow = open >= cfg.minOpen && m >= (s.starting ? cfg.startSlowFactor : cfg.slowFactor) * fastest && m - fastest >= cfg.minExcessMsPerMib;
  // As many as the link carries at the fastest speed, and one more.
  const carried = Math.min(cfg.max - 1, Math.max(cfg.floor, Math.ceil((open * fastest) / m) + 1));
  if (s.starting && !slow) {
    // Twice as many only for downloads that kept the fastest one's speed. Slower, by less than
    // the least excess, is no sign either way: a worker starved of CPU read its first downloads
    // late too, so that the fastest had shared the link as well, and eight open did not look
    // slower than it; the start doubled to its cap of 16 and was lifted (session 65's CI).
    if (open < s.limit! - 0.5) {
      s.samples = s.samples.slice(-cfg.judgeSamples);
      return undefined;
    }
    if (m >= cfg.startSlowFactor * fastest) {
      s.undecidedSinceMs ??= nowMs;
      if (nowMs - s.undecidedSinceMs >= cfg.undecidedMs) {
        s.fastestMsPerMib = m;
        delete s.undecidedSinceMs;
      }
      s.samples = s.samples.slice(-cfg.judgeSamples);
      return undefined;
    }
    // That many open kept their speed: twice as many, judged as soon as six of them have ended.
    const next = s.limit! * 2;
    if (next >= cfg.max) {
      delete s.starting;
      set(s, null, nowMs, 0);
      return { kind: 'lifted', mibPerS: round2(mibPerS) };
    }
    set(s, next, nowMs, 0);
    return { kind: 'started', limit: next, mibPerS: round2(mibPerS) };
  }
  if (s.limit === null || s.starting) {
    if (!slow) return undefined;
    delete s.starting;
    set(s, carried, nowMs, cfg.settleMs);
    return { kind: 'limited', limit: carried, medianMsPerMib: Math.round(m), fastestMsPerMib: Math.round(fastest), open: Math.round(open * 10) / 10 };
  }
  // Fewer open than the limit allows: the site got all that was asked of it, and says nothing of more.
  if (open < s.limit - 0.5) {
    s.samples = s.samples.slice(-cfg.judgeSamples);
    return undefined;
  }
  if (slow && carried < s.limit - 1) {
    set(s, carried, nowMs, cfg.holdMs);
    return { kind: 'lowered', limit: carried, mibPerS: round2(mibPerS) };
  }
  const probe = s.probe;
  if (probe && probe.from < s.limit) {
    // Downloads added on a link of their own add their share of the throughput; half of it counts.
    if (mibPerS < probe.mibPerS * (1 + (0.5 * (s.limit - probe.from)) / probe.from)) return back(s, probe, 'down', nowMs, cfg);
    // More downloads did not slow the others: what each gets now is what one gets alone (the
    // fastest seen may have been a fluke, a cached copy), and a later slowdown is judged against it.
    s.fastestMsPerMib = Math.max(fastest, m);
  } else if (probe && mibPerS < probe.mibPerS * cfg.keepShare) {
    return back(s, probe, 'up', nowMs, cfg);
  }
  // A probe that paid goes on the same way; from a settled limit, the way it is due.
  let up = probe ? probe.from < s.limit : s.nextProbe === 'up';
  if (!up && s.limit <= cfg.floor) up = true;
  const step = Math.max(1, Math.floor(s.limit / 4));
  const next = up ? s.limit + step : Math.max(cfg.floor, s.limit - step);
  if (next >= cfg.max) {
    set(s, null, nowMs, 0);
    return { kind: 'lifted', mibPerS: round2(mibPerS) };
  }
  const from = { from: s.limit, mibPerS };
  set(s, next, nowMs, cfg.settleMs);
  s.probe = from;
  return { kind: up ? 'probe-up' : 'probe-down', limit: next, mibPerS: round2(mibPerS) };
}

/** The probe did not pay: back to the limit it started from, for a while, and the other way next. */
function back(s: OpenLimitState, probe: { from: number; mibPerS: number }, nextProbe: 'up' | 'down', nowMs: number, cfg: OpenLimitConfig): OpenLimitChange {
  set(s, probe.from, nowMs, cfg.holdMs);
  s.nextProbe = nextProbe;
  return { kind: 'back', limit: probe.from, mibPerS: round2(probe.mibPerS) };
}

function set(s: OpenLimitState, limit: number | null, nowMs: number, holdMs: number): void {
  s.limit = limit;
  s.samples = [];
  s.changedAtMs = nowMs;
  s.judgeAfterMs = nowMs + holdMs;
  delete s.probe;
  delete s.undecidedSinceMs;
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
