import { createHash } from 'node:crypto';
import { classifyStatus, statusReason } from '../politeness/classify';
import { transferMsPerMib } from '../politeness/latency';
import { parseRetryAfter, RETRY_AFTER_READ_CAP_MS } from '../politeness/retryAfter';
import { quotaWaitMs, type SiteQuota } from '../politeness/rateLimitHeaders';
import type { ProcessedUrl, UrlProcessor } from '../activities/crawlActivities';
import type { OpenLimitHint, RedirectHop, RefusalHint, RequestOutcome } from '../shared/types';
import { analyse, type Analysis, ContentError, thumbnail } from './analyse';
import { absorbSetCookies, cookieHeader } from './chainCookies';
import type { PipelineConfig } from './config';
import { DECODE_DEATHS_TO_REFUSE, type DecodeCrashGuard } from './decodeCrashGuard';
import { decodeWeight } from './decodeMemory';
import { Fetcher, FetchError, type FetcherOptions, validateUrl } from './fetcher';
import { originalKey, thumbnailKey } from './keys';
import { differenceHash } from './differenceHash';
import { ROBOTS_MAX_ORIGINS, RobotsCache, type RobotsVerdict } from './robots';
import { RobotsShelf, SiteFileShelf } from './siteFileShelf';
import { rightsFields, type RightsHeaders } from './rightsHeaders';
import { TdmRepCache, withSiteRule } from './tdmRep';
import { MovedOrigins } from './movedOrigins';
import { RedirectTargets } from './redirectTargets';
import type { Spool } from './spool';
import { FairSlots, WeightedBudget } from '../shared/concurrency';
import type { ObjectStore } from './store';
import { describeStoreError } from './storeError';
import type { WorkerNetwork } from './workerOutage';

/** Retry-After is read up to a day (the most --max-retry-after allows); the fetch activity and the monitor cap it. */
const MAX_RETRY_AFTER_MS = RETRY_AFTER_READ_CAP_MS;

/** How long the outcome and record of a URL whose record the store could not take are kept to be recorded without a request. */
const KEPT_RECORD_MAX_AGE_MS = 24 * 60 * 60_000;

/**
 * One URL through the whole pipeline: validate, robots.txt, fetch, analyse, thumbnail, store.
 * Every problem of the URL or the site becomes an outcome. When the store cannot take the
 * thumbnail, the fetched bytes go to the spool and the URL goes back without using an attempt
 * (`storeFailure`): it is stored from the spool, without asking the site again, once the store
 * works. Anything else unexpected throws.
 */
export class ImagePipeline implements UrlProcessor {
  readonly fetcher: Fetcher;
  readonly robots: RobotsCache;
  /** Sites' TDMRep files, when CRAWL_READ_TDMREP asks for them. */
  readonly tdmRep?: TdmRepCache;
  /** Origins that moved (http to https, to www): their URLs are asked where they went (movedOrigins.ts). */
  readonly moved = new MovedOrigins();
  /** Images that many URLs redirect to, fetched once (redirectTargets.ts). */
  readonly targets = new RedirectTargets();
  /** Downloaded bodies not yet through analysis and storage (see PipelineConfig.maxBacklog). */
  private backlog = 0;
  private backlogBytes = 0;
  /** The backlog per source: one source may hold at most three quarters of it (see busy()). */
  private readonly backlogOf = new Map<string, { count: number; bytes: number }>();
  /**
   * Pixels being decoded for thumbnails (PipelineConfig.maxDecodePixels, see decodeWeight), in
   * two parts: a tenth for small images (each under a hundredth of the whole: most web images),
   * the rest for larger ones, so that a small image never waits behind a large one that takes
   * the budget alone (a site of 100-megapixel AVIFs held every other source's thumbnails for 40 s).
   */
  readonly decodeBudget: WeightedBudget;
  readonly smallDecodeBudget: WeightedBudget;
  /** Images in sharp at once (PipelineConfig.imageConcurrency), shared fairly between sources. */
  readonly imageSlots: FairSlots;

  /**
   * @param crashGuard images whose decoding killed workers on this machine (decodeCrashGuard.ts);
   *   without one (tests, benches) every image is decoded.
   */
  constructor(private readonly cfg: PipelineConfig, private readonly store: ObjectStore, private readonly spool: Spool, fetcherOptions?: FetcherOptions,
    private readonly crashGuard?: DecodeCrashGuard) {
    this.fetcher = new Fetcher(cfg, fetcherOptions);
    this.smallDecodeBudget = new WeightedBudget(Math.ceil(cfg.maxDecodePixels / 10));
    this.decodeBudget = new WeightedBudget(cfg.maxDecodePixels - this.smallDecodeBudget.capacity);
    this.imageSlots = new FairSlots(cfg.imageConcurrency);
    this.robots = new RobotsCache(this.fetcher, cfg, Date.now, ROBOTS_MAX_ORIGINS, new RobotsShelf(store));
    this.tdmRep = cfg.readTdmRep ? new TdmRepCache(this.fetcher, cfg, Date.now, new SiteFileShelf(store, 'tdmrep.json')) : undefined;
  }

  close(): Promise<void> {
    this.crashGuard?.close();
    return this.fetcher.close();
  }

  networkDownFailures(): number {
    return this.fetcher.outage.notCountedTotal;
  }

  get network(): WorkerNetwork {
    return this.fetcher.outage;
  }

  /**
   * The URL's next request goes to its origin (robots.txt or the image), or to where that origin's
   * robots.txt redirected: open a connection there ahead.
   */
  preconnect(url: string, slotMs: number): void {
    const next = this.nextRequestUrl(this.moved.resolve(url));
    this.fetcher.preconnect(next, slotMs);
    // Another worker (or an earlier run) may have kept this origin's robots.txt in the store.
    try {
      this.robots.warm(new URL(next).origin);
    } catch {
      // not a URL: process() refuses it
    }
  }

  /** The worker's requests open to the site the URL's next request goes to, and its learnt limit (siteDownloads.ts). */
  openAt(url: string): { origin: string; open: number; learnt?: number; starting?: true; refused?: true } | undefined {
    return this.fetcher.openAt(this.nextRequestUrl(this.moved.resolve(url)));
  }

  /** Limits other workers learnt (the grant's, from the source's monitor), for sites this worker has not judged. */
  takeOpenLimits(hints: Readonly<Record<string, OpenLimitHint>>): void {
    for (const [origin, hint] of Object.entries(hints)) this.fetcher.downloads.take(origin, hint);
  }

  openLimitHint(origin: string): OpenLimitHint | undefined {
    return this.fetcher.downloads.hint(origin);
  }

  othersMayHold(origin: string, startMs: number, quietMs?: number): boolean {
    return this.fetcher.downloads.othersMayHold(origin, startMs, quietMs);
  }

  takeRefusals(hints: Readonly<Record<string, RefusalHint>>): void {
    for (const [origin, hint] of Object.entries(hints)) this.fetcher.downloads.takeRefusal(origin, hint);
  }

  refusalHint(origin: string): RefusalHint | undefined {
    return this.fetcher.downloads.refusalHint(origin);
  }

  crawlDelay(url: string): { origin: string; ms: number } | undefined {
    try {
      const u = new URL(this.moved.resolve(url));
      const ms = this.robots.crawlDelayMs(u);
      return ms === undefined ? undefined : { origin: u.origin, ms };
    } catch {
      return undefined;
    }
  }

  private nextRequestUrl(url: string): string {
    try {
      const u = new URL(url);
      return (!this.robots.known(u) && this.robots.pendingHop(u.origin)) || url;
    } catch {
      return url;
    }
  }

  /**
   * The URL's outcome when it is certain without a request and without image work: a URL that
   * cannot be fetched, or one its origin's cached robots.txt rules out (disallowed, an address
   * refused, robots.txt given up on). Such a URL takes no request slot: at a source whose
   * robots.txt disallows us, each one used to wait out a slot, and 100,000 of them at 1/s took
   * 28 hours with a single request sent.
   */
  decideWithoutRequest(url: string, hop?: RedirectHop): ProcessedUrl | undefined {
    // A redirect part-way: only its target's image fetched just before settles it (robots.txt
    // and the guard were the target origin's, checked then).
    if (hop) return this.fromTarget(url, hop);
    // Spooled bytes were fetched already and are still to be stored: process() finishes them.
    if (this.spool.mayHold(url)) return undefined;
    let u: URL;
    try {
      u = validateUrl(url);
    } catch (err) {
      return { outcome: { url, sent: false, cls: 'refused', reason: (err as FetchError).message } };
    }
    // Asked where its origin moved: that origin's robots.txt rules it.
    const asked = this.moved.resolve(url);
    const verdict = this.robots.cachedVerdict(asked === url ? u : new URL(asked));
    // An origin whose robots.txt is to be read again puts its URLs off (requeue, robotsRetryAtMs)
    // without a slot: the grant's slots go to the source's other hosts.
    return verdict && withoutFetching(url, verdict, this.cfg.robotsMaxTries);
  }

  /**
   * Keeps finished URLs' outcomes and records the store could not take, so that when their
   * grant is given up on, the next grant with them records them without asking the site again.
   */
  async keepRecords(kept: readonly { url: string; outcome: RequestOutcome; record: Record<string, unknown> }[]): Promise<void> {
    for (const { url, outcome, record } of kept) {
      const { url: _u, final: _f, attempt: _a, ...rest } = outcome;
      await this.spool.keepRecord(url, { outcome: rest, record });
    }
  }

  /** Their records were stored: nothing kept of them is needed any more. */
  recordsStored(urls: readonly string[]): Promise<void> {
    return this.spool.dropRecords(urls);
  }

  /** A redirect whose target's image was fetched within TARGET_TTL_MS ends with it. */
  private fromTarget(url: string, hop: RedirectHop): ProcessedUrl | undefined {
    const hit = this.targets.get(hop.url);
    if (!hit) return undefined;
    return {
      outcome: { url, sent: false, cls: 'done', ...(hit.status !== undefined ? { status: hit.status } : {}), ...(hit.sha !== undefined ? { sha: hit.sha } : {}) },
      record: { ...hit.record, finalUrl: hop.url, redirects: hop.redirects },
      reused: true,
    };
  }

  async process(url: string, ctx: { source: string; attempt: number; signal: AbortSignal; sendBy?: number; mayGoLate?: () => boolean; hop?: RedirectHop; onConnectionWait?: (perSite: number) => void; onQuota?: (quota: SiteQuota) => void }): Promise<ProcessedUrl> {
    const base = { url, sent: false };
    const known = ctx.hop && this.fromTarget(url, ctx.hop);
    if (known) return known;
    // Finished before, but its record could not be stored then: recorded now, the site not asked.
    // Not one kept for longer than a store outage lasts: another worker has recorded that URL
    // since, and this is a later manifest asking for it afresh.
    const kept = ctx.hop ? undefined : await this.spool.takeRecord(url);
    if (kept && Date.now() - (kept.outcome.atMs ?? 0) < KEPT_RECORD_MAX_AGE_MS) {
      return { outcome: { ...kept.outcome, url, sent: false }, record: kept.record, reused: true, final: true };
    }
    // A redirect's next hop is a request of its own, in a slot of its own: the site sees no more
    // requests in a second than it was granted, however many hops an image takes.
    const target = ctx.hop?.url ?? this.moved.resolve(url);
    // Checked right before anything leaves for the site: work before it (spool, robots cache)
    // can be slow under load, and a late request would crowd the next slot at the origin.
    const tooLate = () => ctx.sendBy !== undefined && Date.now() > ctx.sendBy && !ctx.mayGoLate?.();
    const late: ProcessedUrl = { outcome: { ...base, cls: 'error', reason: 'missed its slot' }, requeue: true };
    let u: URL;
    try {
      u = validateUrl(target);
    } catch (err) {
      return { outcome: { ...base, cls: 'refused', reason: (err as FetchError).message } };
    }

    const spooled = ctx.hop ? undefined : await this.spool.get(url);
    const fromSpool = spooled !== undefined;
    let body = spooled?.body;
    let rightsHeaders = spooled?.rights;
    let timing: { status?: number; ttfbMs?: number; totalMs?: number; msPerMib?: number; sent: boolean } = { status: 200, sent: false };
    const redirects = ctx.hop?.redirects ?? 0;
    if (!body) {
      if (!this.robots.known(u)) {
        if (tooLate()) return late;
        // Fetching robots.txt spends this slot: the image waits for a later one.
        const { verdict: first, fetched, shared } = await this.robots.check(u, ctx.signal, ctx.sendBy, ctx.mayGoLate, ctx.onQuota);
        // Nothing left for a refused address: the URL is refused in this slot.
        if (first.kind === 'refused') return { outcome: { ...base, cls: 'refused', reason: first.reason } };
        if (!shared) return { outcome: { ...base, cls: 'error', sent: fetched, reason: `robots.txt ${fetched ? 'fetched' : 'not fetched yet'}` }, requeue: true, siteFile: 'robots.txt' };
        // Read from the store, no request made: the image takes this slot, unless the file asks
        // for a Crawl-delay, which the activity applies before the host's first request.
        if (this.robots.crawlDelayMs(u) !== undefined) return { outcome: { ...base, cls: 'error', reason: 'robots.txt read from the store' }, requeue: true, siteFile: 'robots.txt', siteFileKept: true };
      }
      const { verdict } = await this.robots.check(u, ctx.signal);
      const unfetchable = withoutFetching(url, verdict, this.cfg.robotsMaxTries);
      if (unfetchable) return unfetchable;
      // The origin's TDMRep file before its first image, in a slot of its own as robots.txt.
      if (this.tdmRep && !this.tdmRep.known(u)) {
        if (tooLate()) return late;
        const fetched = await this.tdmRep.load(u, ctx.signal, ctx.sendBy, ctx.mayGoLate, ctx.onQuota);
        // Read from the store, no request made: the image takes this slot.
        if (fetched !== 'kept') return { outcome: { ...base, cls: 'error', sent: fetched, reason: `tdmrep.json ${fetched ? 'fetched' : 'not fetched yet'}` }, requeue: true, siteFile: 'tdmrep.json' };
      }

      if (tooLate()) return late;
      const busy = this.busy(ctx.source);
      if (busy) return { outcome: { ...base, cls: 'error', reason: `worker busy: ${busy}` }, requeue: true };
      const cookie = cookieHeader(ctx.hop?.cookies, u);
      const res = await this.fetcher.fetch(target, { signal: ctx.signal, sendBy: ctx.sendBy, mayGoLate: ctx.mayGoLate, followRedirects: false, resendInNextSlot: ctx.sendBy !== undefined, onConnectionWait: ctx.onConnectionWait, ...(cookie ? { cookie } : {}) });
      if (res.failure === 'late') return late;
      if (res.quota) ctx.onQuota?.(res.quota);
      if (res.failure === 'resend') return { outcome: { ...base, cls: 'error', sent: true, reason: res.reason }, requeue: true, resend: true };
      timing = { status: res.status, ttfbMs: res.ttfbMs, totalMs: res.totalMs, sent: res.sent };
      if (res.status !== undefined) this.moved.noteAnswer(target, res.status, res.location);
      if (res.location !== undefined) {
        // Endless redirects are what a cookie or login wall answers a client that does not pass it: one of a run that halts.
        if (redirects >= this.cfg.maxRedirects) return { outcome: { ...base, ...timing, cls: 'content', reason: `more than ${this.cfg.maxRedirects} redirects`, page: true } };
        const cookies = absorbSetCookies(ctx.hop?.cookies, res.setCookies ?? [], u);
        // Back to a URL the chain asked already, with the same cookies: the answer will be the
        // same, so the chain ends now instead of after the fifth redirect (a loop of one URL
        // cost six requests, each in a slot, for nothing).
        const asked = [...(ctx.hop?.asked ?? []), requestKey(target, cookie)];
        if (asked.includes(requestKey(res.location, nextCookie(cookies, res.location)))) {
          return { outcome: { ...base, ...timing, cls: 'content', reason: 'redirect loop: back to a URL of the chain with the same cookies', page: true } };
        }
        return { outcome: { ...base, ...timing, cls: 'error', reason: 'redirected' }, requeue: true, hop: { url: res.location, redirects: redirects + 1, asked, ...(cookies ? { cookies } : {}) } };
      }
      if (!res.ok) {
        if (res.failure === 'refused' || res.failure === 'bad-url') return { outcome: { ...base, ...timing, cls: 'refused', reason: res.reason } };
        if (res.failure === 'too-large' || res.failure === 'too-many-redirects' || res.failure === 'bad-redirect' || res.failure === 'bad-encoding') return { outcome: { ...base, ...timing, cls: 'content', reason: res.reason } };
        // Asked again, a server that does not speak HTTP answers the same: one request is the site's cost, not three.
        if (res.failure === 'protocol') return { outcome: { ...base, ...timing, cls: 'error', reason: `protocol: ${res.reason}; not asked again` }, final: true };
        if (res.failure) return { outcome: { ...base, ...timing, cls: 'error', reason: `${res.failure}: ${res.reason}` } };
        const meaning = classifyStatus(res.status!);
        const reason = statusReason(res.status!);
        if (meaning === 'linkrot') return { outcome: { ...base, ...timing, cls: 'linkrot', reason } };
        // A 401, 451 or a firewall's 400 for every URL is a wall as much as a login page is: one of a run that halts.
        if (meaning === 'url-error') return { outcome: { ...base, ...timing, cls: 'content', reason, page: true } };
        // A 429 without Retry-After whose rate-limit headers say when the quota resets: that is when to come back.
        const quotaReset = res.quota?.resetAtMs !== undefined ? quotaWaitMs(res.quota, Date.now(), 0) : undefined;
        const retryAfterMs = parseRetryAfter(res.retryAfter, Date.now(), MAX_RETRY_AFTER_MS, res.siteDate) ?? (quotaReset !== undefined ? Math.min(quotaReset, MAX_RETRY_AFTER_MS) : undefined);
        return { outcome: { ...base, ...timing, cls: 'error', reason, retryAfterMs } };
      }
      // Analysed, it was called a corrupt image ("premature end of JPEG image").
      if (res.status === 206) return { outcome: { ...base, ...timing, cls: 'content', reason: statusReason(206) } };
      body = res.body!;
      const msPerMib = transferMsPerMib(body.length, res.ttfbMs, res.totalMs);
      if (msPerMib !== undefined) timing = { ...timing, msPerMib };
      // With the site's TDMRep rule, kept with the bytes should the store fail (the spool).
      rightsHeaders = withSiteRule(res.rightsHeaders, this.tdmRep?.ruleFor(u));
    }

    const held = body.length;
    this.backlog += 1;
    this.backlogBytes += held;
    const mine = this.backlogOf.get(ctx.source) ?? { count: 0, bytes: 0 };
    this.backlogOf.set(ctx.source, mine);
    mine.count += 1;
    mine.bytes += held;
    let analysis: Analysis | undefined;
    try {
      let thumb: Buffer | undefined;
      let dHash: string | null = null;
      let unreadable: ContentError | undefined;
      const sha256 = createHash('sha256').update(body).digest('hex');
      try {
        const guard = this.crashGuard;
        const deaths = guard?.deathsDuring(sha256) ?? 0;
        if (deaths >= DECODE_DEATHS_TO_REFUSE) {
          throw new ContentError(`a worker on this machine died ${deaths} times while decoding this image (sha256 ${sha256.slice(0, 12)}: a crash of the image decoder, or its memory), so it is not decoded again`);
        }
        const decoding = <T>(decode: () => Promise<T>): Promise<T> => (guard ? guard.decoding(sha256, decode) : decode());
        analysis = await this.imageSlots.use(ctx.source, () => decoding(() => analyse(body, this.cfg.maxPixels, sha256)));
        const weight = decodeWeight(body, analysis);
        const budget = weight <= this.cfg.maxDecodePixels / 100 ? this.smallDecodeBudget : this.decodeBudget;
        // The slot is taken once the memory is: an image waiting for memory holds no slot another source could use.
        [thumb, dHash] = await budget.use(weight, () => this.imageSlots.use(ctx.source, () => decoding(async () => {
          const made = await thumbnail(body, { maxPixels: this.cfg.maxPixels, maxSide: this.cfg.thumbnailMaxSide, quality: this.cfg.thumbnailQuality, format: this.cfg.thumbnailFormat });
          // The image is kept without it rather than lost over a hash.
          return [made, this.cfg.perceptualHash ? await differenceHash(made).catch(() => null) : null] as const;
        })));
      } catch (err) {
        if (!(err instanceof ContentError)) throw err;
        unreadable = err;
      }
      // An image read but not decodable here (a HEIC photo) is kept too: another decoder may read it.
      const original = analysis && this.cfg.keepOriginals ? originalKey(analysis.sha256, analysis.format) : undefined;
      const key = thumb ? thumbnailKey(url, this.cfg.thumbnailFormat) : null;
      try {
        await Promise.all([
          original && this.store.put(original.key, body, original.contentType),
          thumb && this.store.put(key!, thumb, this.cfg.thumbnailFormat === 'webp' ? 'image/webp' : 'image/jpeg'),
        ]);
      } catch (err) {
        // Not the URL's failure: keep the bytes so that it is stored later without asking the site again.
        if (!fromSpool) await this.spool.put(url, body, rightsHeaders).catch(() => undefined);
        return { outcome: { ...base, ...timing, cls: 'error', reason: 'the store failed' }, requeue: true, storeFailure: describeStoreError(err) };
      }
      if (fromSpool) await this.spool.delete(url);
      const stored = { dHash, thumbnailKey: key, originalKey: original?.key ?? null };
      if (unreadable) {
        // Read but not decodable (a HEIC photo, a JPEG cut short after its headers): its size,
        // hash and rights were read and are worth keeping; there is no thumbnail.
        // Not read as an image at all (a page, a file its decoder killed workers on): what was
        // served, its size and hash, all the same: the same bytes behind other URLs show up.
        const record = analysis ? { ...analysis, ...recordRights(analysis, rightsHeaders, this.cfg.robotsAgent, target), ...stored, finalUrl: target, redirects } : { bytes: body.length, sha256, finalUrl: target, redirects };
        return { outcome: { ...base, ...timing, cls: 'content', reason: unreadable.message, ...(unreadable.page ? { page: true as const } : {}) }, record };
      }
      const done = analysis!;
      const sha = done.sha256.slice(0, 8);
      const rights = recordRights(done, rightsHeaders, this.cfg.robotsAgent, target);
      if (ctx.hop) this.targets.remember(target, { record: { ...done, ...rights, ...stored }, status: timing.status, sha });
      return {
        outcome: { ...base, ...timing, cls: 'done', sha },
        record: { ...done, ...rights, ...stored, finalUrl: target, redirects },
      };
    } finally {
      this.backlog -= 1;
      this.backlogBytes -= held;
      mine.count -= 1;
      mine.bytes -= held;
      if (mine.count === 0) this.backlogOf.delete(ctx.source);
    }
  }

  /**
   * Why the source is to send nothing now, or undefined. Beside the worker's whole backlog, a
   * quarter of it is kept from any one source: a site of slow images at a high rate would
   * otherwise fill it alone, and every other source would be refused until those were through.
   */
  private busy(source: string): string | undefined {
    if (this.backlog >= this.cfg.maxBacklog || this.backlogBytes >= this.cfg.maxBacklogBytes) return 'analysis backlog full';
    const mine = this.backlogOf.get(source);
    if (mine && (mine.count >= (this.cfg.maxBacklog * 3) / 4 || mine.bytes >= (this.cfg.maxBacklogBytes * 3) / 4)) {
      return 'this source has three quarters of the analysis backlog';
    }
    return undefined;
  }
}

/** What robots.txt's verdict makes of a URL that is not to be fetched; undefined when it may be. */
function withoutFetching(url: string, verdict: RobotsVerdict, maxTries: number): ProcessedUrl | undefined {
  const base = { url, sent: false };
  if (verdict.kind === 'refused') return { outcome: { ...base, cls: 'refused', reason: verdict.reason } };
  if (verdict.kind === 'disallowed') return { outcome: { ...base, cls: 'robots', reason: verdict.reason } };
  if (verdict.kind === 'unavailable') {
    if (verdict.giveUp) return { outcome: { ...base, cls: 'error', reason: verdict.reason }, final: true };
    // Not this URL's failure: it waits, with its attempts, until robots.txt is asked again.
    return {
      outcome: { ...base, cls: 'error', reason: `${verdict.reason}; host treated as disallowed for now` }, requeue: true, robotsRetryAtMs: verdict.retryAtMs,
      // For the operator: which host of the source, and how close it is to being given up on.
      robotsError: `${new URL(url).origin}: ${verdict.reason} (try ${verdict.tries} of ${maxTries}; its URLs fail after the last)`,
    };
  }
  return undefined;
}

/** A request of a redirect chain as its loop check knows it: the URL and the cookies sent. */
function requestKey(url: string, cookie: string | undefined): string {
  return createHash('sha256').update(url).update('\n').update(cookie ?? '').digest('base64url').slice(0, 12);
}

/** The Cookie header a redirect's next hop would send (none for a Location that is no URL: its fetch refuses it). */
function nextCookie(cookies: RedirectHop['cookies'], location: string): string | undefined {
  try {
    return cookieHeader(cookies, new URL(location));
  } catch {
    return undefined;
  }
}

/** The record's fields from the response's rights headers; the file's own license URL first, else the response's Link rel=license. */
function recordRights(analysis: Analysis, raw: RightsHeaders | undefined, agent: string, url: string) {
  const { licenseLink, ...fields } = rightsFields(raw, agent, url);
  return { licenseUrl: analysis.licenseUrl ?? licenseLink, ...fields };
}
