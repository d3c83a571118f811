import net from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import { proxyConnector } from './proxy';
import { Agent, buildConnector, errors as undiciErrors, Pool, type Dispatcher } from 'undici';
import type { PipelineConfig } from './config';
import { setBounded } from '../shared/boundedMap';
import { MAX_URL_CHARS, sentChars } from '../shared/urlLimits';
import { errorCode } from '../shared/errorText';
import { log } from '../shared/log';
import { openFilesLimit } from '../shared/openFiles';
import { closedUnanswered, IDLE_CLOSE_MIN_MS, noteConnectionFree, type SendWatcher, watchNextSend } from './connectionReuse';
import { decodeContent } from './contentEncoding';
import { readRightsHeaders, type RightsHeaders } from './rightsHeaders';
import { SiteDownloads } from './siteDownloads';
import { TRANSFER_SAMPLE_MIN_BYTES } from '../politeness/latency';
import { isThrottle } from '../politeness/classify';
import { NetworkGuard } from './networkGuard';
import { type Connector, noteSlowFirst, WarmConnections } from './warmConnections';
import { noRouteError, type OutageChange, WorkerOutageWatch } from './workerOutage';
import { UserAgentNotice } from './userAgentNotice';
import { ExcludedHosts } from './excludedHosts';
import { readSiteQuota, type SiteQuota } from '../politeness/rateLimitHeaders';

/**
 * HTTP fetching for hostile input: http(s) only, redirects followed by hand (each hop
 * re-validated and re-guarded), connect/header/total timeouts, a minimum transfer rate and a
 * body-size cap enforced while streaming. TLS verification stays on (undici's default).
 */

export type FetchFailure =
  | 'bad-url' | 'bad-redirect' | 'refused' | 'too-many-redirects' | 'timeout' | 'too-slow' | 'too-large' | 'bad-encoding' | 'network' | 'protocol' | 'late' | 'resend';

export interface FetchResult {
  ok: boolean;
  /** Set when a response arrived (the final hop's status). */
  status?: number;
  failure?: FetchFailure;
  reason?: string;
  finalUrl: string;
  redirects: number;
  /** Time to first byte of the final hop's response headers, ms. */
  ttfbMs?: number;
  totalMs: number;
  body?: Buffer;
  contentType?: string;
  retryAfter?: string;
  /** The response's Date header: the site's clock, which a Retry-After date is on (retryAfter.ts). */
  siteDate?: string;
  /** True once any request left this process for the site. */
  sent: boolean;
  /** With `truncate`: the body is the first `maxBytes` of a longer one. */
  truncated?: boolean;
  /**
   * With `followRedirects: false`: the absolute URL a redirect response points to (not
   * validated yet: the next hop's fetch does that).
   */
  location?: string;
  /** With `location`: the redirect's Set-Cookie values, for the chain's next hops (chainCookies.ts). */
  setCookies?: string[];
  /** A 2xx response's headers on how its content may be used (rightsHeaders.ts), when it had any. */
  rightsHeaders?: RightsHeaders;
  /** The quota the response's rate-limit headers state (rateLimitHeaders.ts), when they state one. */
  quota?: SiteQuota;
}

export class FetchError extends Error {
  constructor(public readonly failure: FetchFailure, message: string) {
    super(message);
  }
}

export function validateUrl(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new FetchError('bad-url', `not a valid URL: ${JSON.stringify(raw.slice(0, 200))}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new FetchError('bad-url', `scheme ${u.protocol} not allowed (http and https only)`);
  if (u.username || u.password) throw new FetchError('bad-url', 'credentials in URLs are not allowed');
  return u;
}

/** The request would have left after its send-by time; nothing was written to the socket. */
export class LateError extends Error {
  constructor() {
    super('the request could not leave before its send-by time; not sent');
  }
}

/**
 * Refuses to write a request whose send-by time has passed. undici calls onRequestStart on a
 * connected socket right before it writes the request, so this is the last moment to decide:
 * a connection that took long to open or a busy event loop cannot make a paced request go
 * late and crowd the next one at the site (measured: 70 ms after its slot on a saturated
 * machine, with the earlier check passed). Unless `mayGoLate` lets it go all the same: the
 * paced runner can move the rest of the grant later when nothing has left after this request.
 */
/**
 * Passes everything through to the handler it wraps. Not undici's DecoratorHandler: that one
 * asserts that a response starts once, so an interim response (103 Early Hints, 102 Processing)
 * before the final one failed the request as malformed.
 */
class SendByHandler implements Dispatcher.DispatchHandler {
  constructor(private readonly inner: Dispatcher.DispatchHandler, private readonly sendBy: number, private readonly mayGoLate?: () => boolean) {}

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    // Thrown, not passed to controller.abort(): undici fails a request whose onRequestStart
    // throws without touching its connection, while abort() destroys the socket. Under load
    // that made every late request cost a new connection for the next one, which then came
    // late too (measured: 1,000 connections and 1,000 late requests for 1,600 images).
    if (Date.now() > this.sendBy && !this.mayGoLate?.()) throw new LateError();
    this.inner.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, socket: Duplex): void {
    this.inner.onRequestUpgrade?.(controller, statusCode, headers, socket);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    this.inner.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.inner.onResponseData?.(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    this.inner.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    this.inner.onResponseError?.(controller, error);
  }
}

const sendByInterceptor: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
  const { sendBy, mayGoLate } = opts as { sendBy?: number; mayGoLate?: () => boolean };
  return dispatch(opts, sendBy === undefined ? handler : new SendByHandler(handler, sendBy, mayGoLate));
};

/** A paced request's slot further ahead than this gets its connection check on a timer. */
const FAR_AHEAD_MS = 1_000;
const MAX_TRACKED_ORIGINS = 10_000;
/**
 * The most header bytes a response may have. Node's 16 KiB default guards servers against their
 * clients; sites send images with a long Content-Security-Policy, many cookies or CDN trace
 * headers that browsers (Chrome: 256 KiB) show. Bounded all the same, and within the headers timeout.
 */
export const MAX_RESPONSE_HEADER_BYTES = 256 * 1024;

/** Connections are closed this much before a site's learnt idle limit: its clock and ours differ by a round trip or so. */
function idleMargin(limitMs: number): number {
  return Math.max(100, 0.2 * limitMs);
}
type ConnectTarget = { protocol: string; host: string; hostname: string; port: string };

export interface FetcherOptions {
  /** Wraps the connector undici would use (tests: a far host's connect time on loopback). */
  wrapConnector?: (connect: Connector) => Connector;
  /** Told of each request sent again after the site closed its connection unanswered (metrics). */
  onResend?: () => void;
  /** Tells the worker's own network outage from its sites' failures (tests: a faster clock). */
  outage?: WorkerOutageWatch;
  /** Says once that a placeholder User-Agent goes to real sites (tests: any host counts as one). */
  userAgentNotice?: UserAgentNotice;
}

export class Fetcher {
  readonly guard: NetworkGuard;
  readonly agent: Agent;
  readonly warm: WarmConnections;
  private readonly dispatcher: Dispatcher;
  /** The Agent's pool per origin, to see whether one has a free connection (preconnect). */
  private readonly pools = new Map<string, Pool>();
  /** Origin -> the latest slot a paced request is expected in (preconnect). */
  private readonly demand = new Map<string, { slotMs: number; opts: ConnectTarget }>();
  /** Origin -> its next connection check, for a slot further ahead than the origin's lead. */
  private readonly checks = new Map<string, { atMs: number; timer: NodeJS.Timeout }>();
  /** Origin -> typical time a request takes, ms (to tell whether a busy connection frees in time). */
  private readonly responseMs = new Map<string, number>();
  /**
   * Origin -> the shortest wait after which the site was seen to have closed a connection
   * unannounced (a request on it was reset, and sent again): its idle timeout is at most that.
   */
  private readonly idleLimits = new Map<string, number>();
  /**
   * Origins that closed a request sent again on a new connection unanswered too: they drop
   * requests they have read (nginx's 444, a limiter that closes instead of answering), so a
   * close there is no idle-timeout race, and sending again would make two requests in a slot.
   */
  private readonly dropsRequests = new Map<string, true>();
  private closed = false;

  private readonly onResend?: () => void;
  readonly outage: WorkerOutageWatch;
  private readonly userAgentNotice: UserAgentNotice;
  private readonly excluded: ExcludedHosts;
  /** Requests open at each site, and how many each site bears at once (siteDownloads.ts). */
  readonly downloads: SiteDownloads;

  constructor(private readonly cfg: PipelineConfig, opts: FetcherOptions = {}) {
    this.onResend = opts.onResend;
    this.outage = opts.outage ?? new WorkerOutageWatch({ onChange: logOutage });
    this.userAgentNotice = opts.userAgentNotice ?? new UserAgentNotice(cfg.userAgent);
    this.guard = new NetworkGuard(cfg.allowNetworks);
    this.excluded = new ExcludedHosts(cfg.excludeHosts ?? []);
    this.downloads = new SiteDownloads(cfg.maxConnectionsPerSite, cfg.openLimit);
    // rejectUnauthorized explicitly: Node's default follows NODE_TLS_REJECT_UNAUTHORIZED, and a
    // variable set for some other tool must not turn verification off for every site we crawl.
    const direct = buildConnector({ timeout: cfg.connectTimeoutMs, lookup: this.guard.lookup, rejectUnauthorized: true } as buildConnector.BuildOptions);
    const connect = cfg.proxy ? proxyConnector(cfg.proxy, {
      tls: direct, timeoutMs: cfg.connectTimeoutMs, userAgent: cfg.userAgent,
      // One address for the tunnel, IPv4 where the name has one: the proxy cannot try the others
      // for us, and a proxy without an IPv6 route is commoner than one without IPv4.
      lookup: (hostname, cb) => this.guard.lookup(hostname, { all: true }, (err, addresses) => {
        const list = Array.isArray(addresses) ? addresses as { address: string; family: number }[] : [];
        cb(err, (list.find((a) => a.family === 4) ?? list[0])?.address);
      }),
    }) : direct;
    this.warm = new WarmConnections(opts.wrapConnector ? opts.wrapConnector(connect) : connect);
    // One Agent keeps one keep-alive pool per origin.
    this.agent = new Agent({
      maxHeaderSize: MAX_RESPONSE_HEADER_BYTES,
      connect: this.warm.connect,
      headersTimeout: cfg.headersTimeoutMs,
      bodyTimeout: Math.max(cfg.minRateGraceMs, 1_000),
      keepAliveTimeout: 30_000,
      connections: cfg.maxConnectionsPerSite,
      factory: (origin, options) => {
        const pool = new Pool(origin, options);
        if (this.pools.size >= MAX_TRACKED_ORIGINS) {
          for (const [k, p] of this.pools) if (p.closed || p.destroyed) this.pools.delete(k);
        }
        const key = String(origin);
        this.pools.set(key, pool);
        // The site closed a connection (after a response, or idle): if a paced request is due,
        // open another ahead of its slot rather than at it.
        pool.on('disconnect', () => this.ensureConnection(key));
        return pool;
      },
    });
    this.dispatcher = this.agent.compose(sendByInterceptor);
  }

  close(): Promise<void> {
    this.closed = true;
    for (const c of this.checks.values()) clearTimeout(c.timer);
    this.checks.clear();
    this.warm.close();
    return this.agent.close();
  }

  /**
   * Sees to it that a connection to the URL's origin is ready for a paced request at `slotMs`:
   * opens one ahead unless the pool has one free (or busy with a request that will be done by
   * then, or one is opening already), and again whenever the site closes one before that slot.
   * For a slot far ahead the check waits until the origin's lead time before it. No request is
   * sent. Bad or refused URLs are left to fetch().
   */
  preconnect(rawUrl: string, slotMs = Date.now()): void {
    let u: URL;
    try {
      u = validateUrl(rawUrl);
    } catch {
      return;
    }
    const host = u.hostname.replace(/^\[|\]$/g, '');
    if (net.isIP(host) && this.guard.refusal(host, host)) return;
    if (this.excluded.reason(host)) return;
    const origin = u.origin;
    if (this.demand.size >= MAX_TRACKED_ORIGINS && !this.demand.has(origin)) this.demand.clear();
    this.demand.set(origin, { slotMs: Math.max(slotMs, this.demand.get(origin)?.slotMs ?? 0), opts: { protocol: u.protocol, host: u.host, hostname: host, port: u.port } });
    this.ensureConnection(origin);
  }

  /**
   * Opens a connection for the origin's next paced request if it needs one, once the origin's
   * lead before that slot has come. Also when the site closes a connection: opened at once, a
   * connection for a slot 10 s away sat unused until the site closed it too (a server's 5 s idle
   * limit), and its slot then opened a third, arriving late (at one request per 10 s, each image
   * cost two TLS handshakes, and the late sends pushed each window's last slot out of it).
   */
  private ensureConnection(origin: string): void {
    if (this.closed) return;
    const due = this.demand.get(origin);
    const now = Date.now();
    if (!due || due.slotMs < now - 1_000) return; // no paced request expected
    const checkAt = due.slotMs - this.warm.leadMs(origin);
    const limit = this.idleLimits.get(origin);
    // A site known to close idle connections: checked at the lead itself, so that a connection
    // opened for the slot has not waited longer than the site allows by then.
    if (checkAt - now > (limit === undefined ? FAR_AHEAD_MS : 0)) {
      this.checkLater(origin, checkAt);
      return;
    }
    // Its connections that will have waited too long by the slot are closed here, and one is
    // opened ahead in their place: a request sent on one was reset, then sent again on a new
    // connection that had to open at the slot (each image at a site with a 1.06 s idle limit, at
    // one request a second, was a reset request in the site's log).
    if (limit !== undefined && this.warm.closeIdle(origin, due.slotMs - now, limit - idleMargin(limit)) > 0) {
      this.warm.preconnect(due.opts);
      return;
    }
    const pool = this.pools.get(origin);
    if (pool && !pool.closed && !pool.destroyed) {
      const stats = pool.stats;
      // A connection opened ahead now would sit outside the pool until the site closed it.
      if (stats.free > 0 || this.full(stats)) return;
      // Busy, but its request will be done by the slot: no second connection. Also just after
      // an answer, before undici marks its connection free (nothing running, nothing free).
      if (stats.connected > 0 && 2 * (this.responseMs.get(origin) ?? 100) < due.slotMs - now) return;
    }
    this.warm.preconnect(due.opts);
  }

  /**
   * Whether a request to the origin now would wait for one of its connections: each of the
   * CRAWL_MAX_CONNECTIONS_PER_SITE carries a request (one at a time: no pipelining), or some
   * wait already.
   */
  private connectionsFull(origin: string): boolean {
    const pool = this.pools.get(origin);
    return pool !== undefined && !pool.closed && !pool.destroyed && this.full(pool.stats);
  }

  private full({ size, queued }: Pool['stats']): boolean {
    return queued > 0 || size - queued >= this.cfg.maxConnectionsPerSite;
  }

  /**
   * The requests open now to the URL's site, and the limit learnt for it when one holds it
   * (siteDownloads.ts); undefined for a URL that cannot be parsed, left to fetch().
   */
  openAt(rawUrl: string): { origin: string; open: number; learnt?: number; starting?: true; refused?: true } | undefined {
    let origin: string;
    try {
      origin = new URL(rawUrl).origin;
    } catch {
      return undefined;
    }
    const learnt = this.downloads.limit(origin);
    return { origin, open: this.downloads.openAt(origin), ...(learnt !== undefined ? { learnt: learnt.limit, ...(learnt.starting ? { starting: true } : {}), ...(learnt.refused ? { refused: true } : {}) } : {}) };
  }

  /** A request on a connection that had waited `idleMs` was reset: the site's idle limit is at most that. */
  private learnIdleLimit(origin: string, idleMs: number | undefined): void {
    // A reset after a shorter wait is not an idle timeout: learnt, it would have the origin's
    // connections closed after every request.
    if (idleMs === undefined || idleMs < IDLE_CLOSE_MIN_MS) return;
    const known = this.idleLimits.get(origin);
    if (known !== undefined && known <= idleMs) return;
    setBounded(this.idleLimits, origin, idleMs, MAX_TRACKED_ORIGINS);
    // The next slot's check ran before this was known: it is timed again, by the limit.
    this.ensureConnection(origin);
  }

  /** One pending check per origin: an earlier one looks again at the demand when it fires. */
  private checkLater(origin: string, atMs: number): void {
    const pending = this.checks.get(origin);
    if (pending && pending.atMs <= atMs) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.checks.delete(origin);
      this.ensureConnection(origin);
    }, atMs - Date.now());
    timer.unref();
    this.checks.set(origin, { atMs, timer });
  }

  /**
   * `sendBy` (epoch ms): the first request must be on the wire by then, or it is not sent at
   * all (failure 'late', `sent` false). Redirect hops follow the response at once, unless
   * `followRedirects` is false: then a redirect comes back with its `location`, for the caller
   * to request in a later slot of its own. `onConnectionWait` is told when a paced request
   * has to wait for a connection to the site because all of them carry requests.
   */
  async fetch(rawUrl: string, opts: { signal?: AbortSignal; maxBytes?: number; truncate?: boolean; accept?: string; sendBy?: number; mayGoLate?: () => boolean; followRedirects?: boolean; cookie?: string; resendInNextSlot?: boolean; onConnectionWait?: (perSite: number) => void } = {}): Promise<FetchResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const maxBytes = opts.maxBytes ?? this.cfg.maxBodyBytes;
    // One timer and one listener on the caller's signal, both removed when the fetch ends. They
    // abort the hop in flight through its handler: an AbortController per request, with a
    // listener on it per hop, cost more than the rest of the fetch's own bookkeeping.
    let aborted: Error | undefined;
    let inFlight: CollectHandler | undefined;
    const abort = (reason: Error) => {
      aborted ??= reason;
      inFlight?.abort(aborted);
    };
    const timer = setTimeout(() => abort(new FetchError('timeout', 'total timeout')), this.cfg.totalTimeoutMs);
    const parent = opts.signal;
    const onParentAbort = () => abort(parent!.reason instanceof Error ? parent!.reason : new Error('aborted'));
    if (parent?.aborted) onParentAbort();
    else parent?.addEventListener('abort', onParentAbort, { once: true });
    let url = rawUrl;
    let sent = false;
    let sentTo: string | undefined; // the origin of the last request that left
    let redirects = 0;
    const fail = (failure: FetchFailure, reason: string, extra: Partial<FetchResult> = {}): FetchResult =>
      ({ ok: false, failure, reason, finalUrl: url, redirects, totalMs: elapsed(), sent, ...extra });
    try {
      for (;;) {
        const u = validateUrl(url);
        const host = u.hostname.replace(/^\[|\]$/g, '');
        const excluded = this.excluded.reason(host);
        if (excluded) return fail('refused', excluded);
        // A literal IP never reaches the DNS lookup hook, so it is checked here.
        if (net.isIP(host)) {
          const refusal = this.guard.refusal(host, host);
          if (refusal) return fail('refused', refusal);
        }
        this.userAgentNotice.sending(host);
        if (aborted) throw aborted; // nothing of this hop has left
        let hopStart = performance.now();
        const sendBy = redirects === 0 ? opts.sendBy : undefined;
        sent = true;
        sentTo = u.origin;
        const send = (by: number | undefined) => new Promise<HopResponse>((resolve, reject) => {
          if (by !== undefined && opts.onConnectionWait && this.connectionsFull(u.origin)) opts.onConnectionWait(this.cfg.maxConnectionsPerSite);
          const download = this.downloads.start(u.origin);
          const handler = new CollectHandler((r) => {
            if (isThrottle(r.status)) this.downloads.refused(download, r.status);
            this.downloads.end(download, r.body && !r.truncated ? { bytes: r.body.length, transferMs: performance.now() - r.headersAt } : undefined, r.status);
            resolve(r);
          }, (err) => {
            this.downloads.end(download);
            reject(err);
          }, {
            maxBytes, truncate: opts.truncate ?? false, minRateGraceMs: this.cfg.minRateGraceMs, minBytesPerSecond: this.cfg.minBytesPerSecond,
            onLargeBody: () => this.downloads.large(u.origin),
          });
          inFlight = handler;
          // A dispatch that throws has no handler call to end the download: counted open, it
          // would hold its site below a learnt limit for good.
          try {
            this.dispatcher.dispatch({
              origin: u.origin,
              path: `${u.pathname}${u.search}`,
              method: 'GET',
              // Without accept-encoding any coding is acceptable (RFC 9110): images gain nothing from one.
              headers: {
                'user-agent': this.cfg.userAgent, accept: opts.accept ?? 'image/*,*/*;q=0.5', 'accept-encoding': 'identity',
                // Whom a site owner writes to about us (RFC 9110 asks robots to send it).
                ...(this.cfg.from !== undefined ? { from: this.cfg.from } : {}),
                // A chain's cookies, for its first request (a hop of its own): followed hops get none.
                ...(opts.cookie !== undefined && redirects === 0 ? { cookie: opts.cookie } : {}),
              },
              sendBy: by,
              mayGoLate: by === undefined ? undefined : opts.mayGoLate,
            } as Dispatcher.DispatchOptions, handler);
          } catch (err) {
            this.downloads.end(download);
            throw err;
          }
        });
        let res: HopResponse | undefined;
        try {
          res = await send(sendBy);
        } catch (err) {
          if (aborted || !inFlight?.closedBeforeAnswer(err) || this.dropsRequests.has(u.origin)) throw err;
        }
        if (res) this.outage.answered();
        // Reset unanswered on a connection the site had closed meanwhile (connectionReuse.ts), or
        // answered 408, what a site sends as it closes a connection for waiting too long: the
        // site never read the request, so it is sent again once, on a new connection.
        if (!res || (res.status === 408 && !aborted && inFlight?.staleConnection && !this.dropsRequests.has(u.origin))) {
          this.onResend?.();
          this.learnIdleLimit(u.origin, inFlight?.idleBeforeSendMs);
          // A paced request is sent again in its grant's next slot: sent at once, the site had
          // two requests in one slot whenever it had read the first after all (a close after a
          // wait that we took for its idle timeout).
          if (opts.resendInNextSlot) return fail('resend', 'the site closed its connection as the request went out (an idle connection closing); sent again in the next slot');
          hopStart = performance.now();
          try {
            res = await send(undefined);
          } catch (err) {
            if (!aborted && closedUnanswered(err)) setBounded(this.dropsRequests, u.origin, true, MAX_TRACKED_ORIGINS);
            throw err;
          }
          if (res.status === 408) setBounded(this.dropsRequests, u.origin, true, MAX_TRACKED_ORIGINS);
          this.outage.answered();
        }
        const ttfbMs = Math.round(res.headersAt - hopStart);
        const status = res.status;
        const header = (name: string) => {
          const v = res.headers[name];
          return Array.isArray(v) ? v[0] : v;
        };
        // Sent twice, both lines: parseRetryAfter honours the longer wait.
        const retryAfter = joinedHeader(res.headers['retry-after']);
        // Any answer may say the site's quota is spent: a redirect or an error as much as an image.
        // RateLimit is a list of policies: on two lines, both are read (the first alone missed a
        // spent policy on the second).
        const quota = readSiteQuota((name) => (name === 'ratelimit' ? joinedHeader(res.headers[name]) : header(name)), Date.now());
        if (status >= 300 && status < 400 && status !== 304 && header('location')) {
          let target: URL;
          try {
            target = new URL(header('location')!, u);
          } catch {
            // The site's fault and no network trouble: asking again gets the same answer.
            return fail('bad-redirect', `redirect to an invalid URL: ${JSON.stringify(header('location')!.slice(0, 120))}`, { status, ttfbMs });
          }
          const location = target.toString();
          // Bounded as a manifest's URLs are: the hop travels in workflow messages.
          const sentLength = sentChars(target);
          if (sentLength > MAX_URL_CHARS) {
            return fail('bad-redirect', `redirect to a URL of ${sentLength.toLocaleString('en-US')} characters: at most ${MAX_URL_CHARS.toLocaleString('en-US')}`, { status, ttfbMs });
          }
          if (opts.followRedirects === false) {
            const cookies = res.headers['set-cookie'];
            const setCookies = cookies === undefined ? [] : Array.isArray(cookies) ? cookies : [cookies];
            return { ok: false, status, ttfbMs, finalUrl: url, redirects, totalMs: elapsed(), sent, location, ...(setCookies.length ? { setCookies } : {}), ...(quota ? { quota } : {}) };
          }
          if (redirects >= this.cfg.maxRedirects) return fail('too-many-redirects', `more than ${this.cfg.maxRedirects} redirects`, { status, ttfbMs });
          redirects += 1;
          url = location;
          continue;
        }
        const rights = status >= 200 && status < 300 ? readRightsHeaders(res.headers) : undefined;
        const base = { status, ttfbMs, finalUrl: url, redirects, contentType: header('content-type'), retryAfter, siteDate: header('date'), sent, ...(rights ? { rightsHeaders: rights } : {}), ...(quota ? { quota } : {}) };
        if (status < 200 || status >= 300) return { ok: false, ...base, totalMs: elapsed() };
        if (res.failure) return fail(res.failure, res.reason!, base);
        const coding = header('content-encoding');
        if (coding === undefined || coding === 'identity') return { ok: true, ...base, body: res.body!, totalMs: elapsed(), ...(res.truncated ? { truncated: true } : {}) };
        const decoded = await decodeContent(res.body!, coding, { maxBytes, truncate: opts.truncate ?? false, inputTruncated: res.truncated });
        if ('failure' in decoded) return fail(decoded.failure, decoded.reason, base);
        return { ok: true, ...base, body: decoded.body, totalMs: elapsed(), ...(decoded.truncated ? { truncated: true } : {}) };
      }
    } catch (err) {
      if (err instanceof LateError) sent = false;
      // The worker's own shortage, not the site's: the request never left. Counted as the
      // site's failure, it used up robots.txt tries and fed the site's breaker.
      if (outOfFiles(err)) {
        sent = false;
        warnOutOfFiles();
        return fail('late', `not sent: the worker is out of open files (${errorCode(err)}; raise its limit: ulimit -n, LimitNOFILE)`);
      }
      // A reset came back: the network reached the host. So did a proxy's word on the site (a 502, a 403).
      if (['ECONNREFUSED', 'EPROXYBADGATEWAY', 'EPROXYREFUSED'].includes(errorCode(err) ?? '')) this.outage.answered();
      // The worker's own network is down (workerOutage.ts): the first request of the chain never
      // left, and the site is not to blame. A followed hop's failure stays the chain's: its first
      // request did reach the site.
      else if (redirects === 0 && sentTo !== undefined && noRouteError(err) && this.outage.noRoute(sentTo)) {
        sent = false;
        return fail('late', `not sent: the worker's network looks down (${errorCode(err) ?? 'no route'} here and at other sites, none answering)`);
      }
      return fail(...classifyError(err, aborted));
    } finally {
      inFlight = undefined;
      clearTimeout(timer);
      parent?.removeEventListener('abort', onParentAbort);
      if (sent && sentTo) noteSlowFirst(this.responseMs, sentTo, performance.now() - started);
    }
  }
}

interface HopResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** performance.now() when the response headers arrived. */
  headersAt: number;
  /** A 2xx body, whole. */
  body?: Buffer;
  /** A 2xx body refused or lost part-way (the connection is closed). */
  failure?: FetchFailure;
  reason?: string;
  /** The body is the first maxBytes of a longer one (the connection is closed). */
  truncated?: boolean;
}

/** What is read of a body we do not keep (redirects, errors) before the connection is dropped instead. */
const DISCARD_LIMIT = 128 * 1024;

/** A 103 Early Hints or two come before an answer; a site that sends more is holding the request open. */
const MAX_INFORMATIONAL = 5;

/**
 * One request's response, straight from undici's dispatcher: a 2xx body is collected up to
 * the size limit and above the minimum transfer rate, any other body read and dropped. The
 * `request()` API around the same dispatch (a Readable body, an async iterator, an
 * AsyncResource per request) cost the event loop more than the rest of the fetch.
 */
class CollectHandler implements Dispatcher.DispatchHandler, SendWatcher {
  private controller?: Dispatcher.DispatchController;
  private res?: HopResponse;
  private chunks: Buffer[] = [];
  private size = 0;
  private bodyStart = 0;
  private keep = false;
  /** onLargeBody has been called (once a response is known to be large, declared or streamed). */
  private large = false;
  private settled = false;
  private abortReason?: Error;
  /** Informational (1xx) responses so far: each one restarts undici's headers timeout. */
  private informational = 0;
  /** The request went out on a connection the site may have closed (connectionReuse.ts). */
  staleConnection = false;
  /** How long that connection had waited unused before this request. */
  idleBeforeSendMs?: number;
  private socket?: object;
  /** What the connection had received when this request went out (see closedBeforeAnswer). */
  private bytesReadAtSend?: number;

  constructor(
    private readonly resolve: (r: HopResponse) => void,
    private readonly reject: (err: Error) => void,
    /** `truncate`: past maxBytes, keep the first maxBytes as the body instead of failing. */
    private readonly limits: { maxBytes: number; truncate: boolean; minRateGraceMs: number; minBytesPerSecond: number; onLargeBody?: () => void },
  ) {}

  /** The fetch was aborted (total timeout, activity cancelled): drop the request, fail with `reason`. */
  abort(reason: Error): void {
    if (this.settled) return;
    this.abortReason = reason;
    // The caller's abort (a revoked grant's grace ran out) cut the response off: no answer from
    // the site, whatever its status said, so the activity hands the URL back unused. Settled
    // first: the controller's abort reports an error to onResponseError at once.
    if (reason instanceof FetchError) this.failAfterHeaders(reason);
    else this.settle(undefined, reason);
    this.controller?.abort(reason);
  }

  /**
   * Once a status has arrived it is part of the answer even if the body then fails (stalls, or
   * outlasts the total timeout): a 200 whose body stalled is a slow site, not an unreachable
   * one, and a 429 or 404 whose (dropped) body stalled is still a 429 or 404.
   */
  private failAfterHeaders(err: Error): void {
    if (!this.res) return this.settle(undefined, err);
    if (!this.keep) return this.settle(this.res);
    const [failure, reason] = classifyError(err, err, true);
    this.settle({ ...this.res, failure, reason: `${reason}; ${bodyReceived(this.size, this.res.headers)}` });
  }

  private settle(res: HopResponse | undefined, err?: Error): void {
    if (this.settled) return;
    this.settled = true;
    if (res) this.resolve(res);
    else this.reject(err!);
  }

  /** Ends the response early: the connection is dropped, the response so far is the answer. */
  private cut(controller: Dispatcher.DispatchController, failure?: HopResponse['failure'], reason?: string): void {
    this.settle({ ...this.res!, failure, reason });
    controller.abort(new Error(reason ?? 'response body not needed'));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abortReason) controller.abort(this.abortReason);
    else watchNextSend(this);
  }

  sentOn(stale: boolean, idleMs: number, socket: object): void {
    this.staleConnection = stale;
    this.idleBeforeSendMs = idleMs;
    this.socket = socket;
    this.bytesReadAtSend = bytesRead(socket);
  }

  /**
   * The request went out on a connection the site may have closed, and it closed with no answer.
   * Not when any of an answer had come (a status line cut off, headers too short to parse): the
   * site had read the request, and sending it again at once made two requests in one slot.
   */
  closedBeforeAnswer(err: unknown): boolean {
    return this.staleConnection && !this.res && this.abortReason === undefined && closedUnanswered(err)
      && (this.socket === undefined || bytesRead(this.socket) === this.bytesReadAtSend);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (this.settled) return;
    if (statusCode < 200) {
      // A site that sends 103 Early Hints for ever held each try open until the total timeout
      // (60 s, three times): undici restarts its headers timeout at every one.
      if (++this.informational > MAX_INFORMATIONAL) {
        const err = new FetchError('protocol', `more than ${MAX_INFORMATIONAL} informational (1xx) responses and no answer`);
        this.settle(undefined, err);
        controller.abort(err);
      }
      return;
    }
    this.res = { status: statusCode, headers, headersAt: performance.now() };
    this.keep = statusCode < 300;
    this.bodyStart = this.res.headersAt;
    const declared = Number(headers['content-length']);
    if (this.keep && !this.limits.truncate && Number.isFinite(declared) && declared > this.limits.maxBytes) {
      this.cut(controller, 'too-large', `content-length ${declared} exceeds the ${this.limits.maxBytes}-byte limit`);
    } else if (this.keep && declared >= TRANSFER_SAMPLE_MIN_BYTES) {
      // Known at the first answer's headers, before a burst of downloads is sent to share the site's link.
      this.noteLarge();
    } else if (!this.keep && Number.isFinite(declared) && declared > DISCARD_LIMIT) {
      this.cut(controller);
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    this.size += chunk.length;
    if (!this.keep) {
      if (this.size > DISCARD_LIMIT) this.cut(controller);
      return;
    }
    if (this.size > this.limits.maxBytes) {
      if (!this.limits.truncate) return this.cut(controller, 'too-large', `body exceeds the ${this.limits.maxBytes}-byte limit`);
      const keepBytes = chunk.length - (this.size - this.limits.maxBytes);
      this.chunks.push(chunk.subarray(0, keepBytes));
      this.settle({ ...this.res!, body: Buffer.concat(this.chunks, this.limits.maxBytes), truncated: true });
      controller.abort(new Error('rest of the body not needed'));
      return;
    }
    this.chunks.push(chunk);
    // A body sent without a length (chunked) is known to be large only as it streams: until then
    // the site had the worker's whole cap open before six had ended to judge it by.
    if (this.size >= TRANSFER_SAMPLE_MIN_BYTES) this.noteLarge();
    const bodyMs = performance.now() - this.bodyStart;
    if (bodyMs > this.limits.minRateGraceMs && (this.size * 1000) / bodyMs < this.limits.minBytesPerSecond) {
      this.cut(controller, 'too-slow', `transfer below ${this.limits.minBytesPerSecond} bytes/s`);
    }
  }

  private noteLarge(): void {
    if (this.large) return;
    this.large = true;
    this.limits.onLargeBody?.();
  }

  onResponseEnd(): void {
    if (this.socket) noteConnectionFree(this.socket);
    if (this.settled || !this.res) return;
    this.settle(this.keep ? { ...this.res, body: Buffer.concat(this.chunks, this.size) } : this.res);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.failAfterHeaders(err);
  }
}

/** The process (EMFILE) or the machine (ENFILE) has no file descriptor left for a socket. */
/** A header sent on several lines as the one list they make (RFC 9110 5.3); undefined when absent. */
function joinedHeader(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

function outOfFiles(err: unknown): boolean {
  const code = errorCode(err);
  return code === 'EMFILE' || code === 'ENFILE';
}

function logOutage(change: OutageChange): void {
  if (change.kind === 'down') {
    log.warn({ event: 'network-down', sites: change.origins, quietMs: change.quietMs },
      'no site has answered for a while and connections to several fail with no route or no reply: the worker\'s own network looks down. Requests that cannot connect are not counted against their sites (their slots pass) until a site answers, for at most 15 minutes');
  } else if (change.kind === 'back') {
    log.info({ event: 'network-back', downMs: change.downMs, notCounted: change.notCounted }, 'a site answered: the worker\'s network is back');
  } else {
    log.warn({ event: 'network-down-too-long', downMs: change.downMs, notCounted: change.notCounted },
      'no site has answered for 15 minutes: connection failures count against their sites again (sources halt after 50 in a row; crawl resume --all takes them up again)');
  }
}

let lastOutOfFilesWarning = 0;
const OUT_OF_FILES_WARN_EVERY_MS = 60_000;

function warnOutOfFiles(): void {
  if (Date.now() - lastOutOfFilesWarning < OUT_OF_FILES_WARN_EVERY_MS) return;
  lastOutOfFilesWarning = Date.now();
  log.warn({ event: 'out-of-open-files', limit: openFilesLimit() ?? null },
    'the worker is out of open files: requests are not sent (their slots pass, nothing is counted against the sites) until some close; raise its limit (ulimit -n, systemd LimitNOFILE, docker --ulimit nofile) or lower CRAWL_MAX_ACTIVITIES');
}

/**
 * `aborted`: the total timeout's FetchError, or the caller's reason for aborting.
 * `afterHeaders`: the response's status had arrived (the body failed).
 */
function classifyError(err: unknown, aborted: Error | undefined, afterHeaders = false): [FetchFailure, string] {
  if (aborted instanceof FetchError) return [aborted.failure, aborted.message];
  if (err instanceof FetchError) return [err.failure, err.message];
  if (err instanceof LateError) return ['late', err.message];
  const e = err as { code?: string; name?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = errorCode(err);
  if (code === 'ENETGUARD' || code === 'EPROXYREFUSED') return ['refused', (e.cause?.message ?? e.message ?? 'refused')];
  if (code?.startsWith('EPROXY')) return ['network', (e.cause?.message ?? e.message ?? 'proxy failed').slice(0, 300)];
  if (err instanceof undiciErrors.ConnectTimeoutError) return ['timeout', 'connect timeout'];
  if (err instanceof undiciErrors.HeadersTimeoutError) return ['timeout', 'headers timeout'];
  if (err instanceof undiciErrors.BodyTimeoutError) return ['too-slow', 'body stalled'];
  if (e.name === 'AbortError') return ['timeout', 'aborted'];
  // A reason is one line of a record: some messages carry a source excerpt after their first line.
  const message = (e.message ?? String(err)).split('\n', 1)[0]!.trim();
  // A response no HTTP/1.1 client can read: the server's own doing, answered the same way when
  // asked again (not a cut connection, which a content-length mismatch or a reset may be).
  // undici meets some malformed responses (a status line of 000) with an internal assertion.
  if (code === 'ERR_ASSERTION') return ['protocol', `malformed response (${message})`.slice(0, 300)];
  // undici drops the connection on any 100 Continue it did not ask for (RFC 9110 says to skip it).
  if (code === 'UND_ERR_SOCKET' && message === 'bad response') return ['protocol', 'bad response: a 100 Continue that was not asked for, or an answer to no request'];
  // Before the status has reached us, undici's parser refused the headers and undici named the
  // Content-Length it had read (two of them run together, or one beside a chunked
  // Transfer-Encoding, which RFC 9112 forbids): the error does not say which. After it, a
  // connection closed short of the length (cut, and asked again).
  if (code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH' && !afterHeaders) return ['protocol', 'malformed response (its Content-Length header is sent twice, is not a number, or comes with Transfer-Encoding)'];
  if (code === 'UND_ERR_HEADERS_OVERFLOW') return ['protocol', `response headers larger than ${MAX_RESPONSE_HEADER_BYTES} bytes (UND_ERR_HEADERS_OVERFLOW)`];
  if (err instanceof undiciErrors.HTTPParserError || e.name === 'HTTPParserError' || code?.startsWith('HPE_')) {
    return ['protocol', (message.includes(code ?? e.name ?? '') ? message : `${code ?? e.name}: ${message}`).slice(0, 300)];
  }
  // Node's socket errors name their code already ("connect ECONNREFUSED 10.0.0.1:80"): once is enough.
  const label = code ?? e.name ?? 'error';
  return ['network', (message.includes(label) ? message : `${label}: ${message}`).slice(0, 300)];
}

/**
 * How much of a failed body had come, for its reason: a body cut off near its end and one that
 * never started are different faults of a site (the tally of reasons groups them without the numbers).
 */
function bodyReceived(size: number, headers: IncomingHttpHeaders): string {
  const declared = Number(headers['content-length']);
  return `${size}${headers['content-length'] !== undefined && Number.isSafeInteger(declared) ? ` of ${declared}` : ''} bytes of the body received`;
}

/**
 * Bytes of the site's answers a connection has received: a net.Socket's count (a TLS socket's
 * counts decrypted data, so a close_notify alert is not an answer); undefined for anything else.
 */
function bytesRead(socket: object): number | undefined {
  const n = (socket as { bytesRead?: unknown }).bytesRead;
  return typeof n === 'number' ? n : undefined;
}
