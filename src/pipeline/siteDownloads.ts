import { setBounded } from '../shared/boundedMap';
import { log } from '../shared/log';
import { TRANSFER_SAMPLE_MIN_BYTES } from '../politeness/latency';
import { DEFAULT_OPEN_LIMIT, hintOf, newOpenLimitState, noteDownload, startingOpenLimitState, takeHint, type OpenLimitChange, type OpenLimitConfig, type OpenLimitState } from '../politeness/openLimit';
import type { OpenLimitHint } from '../shared/types';

/** One request to a site, from the moment it is handed to the connection pool until its body has ended. */
export interface OpenDownload {
  readonly origin: string;
  readonly sentAtMs: number;
  /** The most requests open at the origin while this one was (itself included). */
  maxOpen: number;
}

const MAX_TRACKED_ORIGINS = 10_000;

/**
 * The worker's requests open at each site, and the limit learnt for it (politeness/openLimit.ts).
 * Counted per worker: two workers crawling one site keep to their limits each. A limit learnt
 * travels through the source's monitor to the workers of its next grants (take, hint).
 */
export class SiteDownloads {
  private readonly open = new Map<string, Set<OpenDownload>>();
  private readonly limits = new Map<string, OpenLimitState>();
  private readonly config: OpenLimitConfig;

  constructor(
    /** The worker's cap per site (CRAWL_MAX_CONNECTIONS_PER_SITE): a limit probed up to it is dropped. */
    maxPerSite: number,
    cfg: Partial<Omit<OpenLimitConfig, 'max'>> = {},
    private readonly onChange: (origin: string, change: OpenLimitChange) => void = logChange,
    private readonly now: () => number = Date.now,
  ) {
    this.config = { ...DEFAULT_OPEN_LIMIT, ...cfg, max: maxPerSite };
  }

  start(origin: string): OpenDownload {
    let set = this.open.get(origin);
    if (!set) this.open.set(origin, (set = new Set()));
    const d: OpenDownload = { origin, sentAtMs: this.now(), maxOpen: 0 };
    set.add(d);
    for (const other of set) other.maxOpen = Math.max(other.maxOpen, set.size);
    return d;
  }

  /** The request has ended; `body`: a whole 2xx body and how long it took from its first byte. */
  end(d: OpenDownload, body?: { bytes: number; transferMs: number }): void {
    const set = this.open.get(d.origin);
    if (set?.delete(d) && set.size === 0) this.open.delete(d.origin);
    if (!body || body.bytes < TRANSFER_SAMPLE_MIN_BYTES) return;
    const msPerMib = (Math.max(0, body.transferMs) * 1024 * 1024) / body.bytes;
    const change = noteDownload(this.stateOf(d.origin), { msPerMib, open: d.maxOpen, sentAtMs: d.sentAtMs }, this.now(), this.config);
    if (change) this.onChange(d.origin, change);
  }

  /** A response declared a large body (TRANSFER_SAMPLE_MIN_BYTES): a site not seen to before starts with a few downloads at once. */
  large(origin: string): void {
    if (!this.limits.has(origin)) setBounded(this.limits, origin, startingOpenLimitState(this.config), MAX_TRACKED_ORIGINS);
  }

  /** A limit another worker learnt for the origin (from the grant), unless this one has judged the site itself. */
  take(origin: string, hint: OpenLimitHint): void {
    const known = this.limits.get(origin);
    const state = known ?? newOpenLimitState();
    const change = takeHint(state, hint, this.now(), this.config);
    if (!change) return;
    // A hint not taken leaves no state: the site's first large answer still gives it its start.
    if (!known) setBounded(this.limits, origin, state, MAX_TRACKED_ORIGINS);
    this.onChange(origin, change);
  }

  /** What this worker has judged of the origin, for its monitor; undefined before a judgement. */
  hint(origin: string): OpenLimitHint | undefined {
    const state = this.limits.get(origin);
    return state && hintOf(state);
  }

  private stateOf(origin: string): OpenLimitState {
    let state = this.limits.get(origin);
    if (!state) setBounded(this.limits, origin, (state = newOpenLimitState()), MAX_TRACKED_ORIGINS);
    return state;
  }

  /** The learnt limit, when one holds the origin below the worker's cap (`starting`: its start, not yet judged). */
  limit(origin: string): { limit: number; starting?: true } | undefined {
    const state = this.limits.get(origin);
    return state?.limit == null ? undefined : state.starting ? { limit: state.limit, starting: true } : { limit: state.limit };
  }

  openAt(origin: string): number {
    return this.open.get(origin)?.size ?? 0;
  }
}

function logChange(origin: string, change: OpenLimitChange): void {
  log.info({ event: 'site-open-limit', origin, ...change }, changeText(change));
}

function changeText(change: OpenLimitChange): string {
  switch (change.kind) {
    case 'limited':
      return `downloads from the site slowed as more were open (median ${change.medianMsPerMib} ms a MiB against ${change.fastestMsPerMib}, ${change.open} open): held to ${change.limit} at once`;
    case 'started':
      return `trying ${change.limit} downloads at once: as many kept their speed`;
    case 'taken':
      return `held to ${change.limit} downloads at once, as the source's monitor last heard from a worker`;
    case 'lowered':
      return `downloads from the site slowed again: held to ${change.limit} at once`;
    case 'probe-up':
    case 'probe-down':
      return `trying ${change.limit} downloads at once`;
    case 'back':
      return `back to ${change.limit} downloads at once: the probe did not pay`;
    case 'lifted':
      return 'more downloads at once kept adding speed: no limit of its own';
  }
}
