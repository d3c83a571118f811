import { decimal } from '../shared/decimal';
import { constants as bufferConstants } from 'node:buffer';
import type { OpenLimitConfig } from '../politeness/openLimit';
import { ExcludedHosts, excludedHostsFromEnv } from './excludedHosts';
import { NetworkGuard } from './networkGuard';
import { parseProxy, type ProxySetting } from './proxy';
import { envText, flagFromEnv, intFromEnv } from '../shared/env';
import { errorText } from '../shared/errorText';
import { usableCpus } from '../shared/usableCpus';

/** Pipeline settings, from the environment with safe defaults. */

export interface PipelineConfig {
  /** The same on every request; names us and a contact URL. */
  userAgent: string;
  /**
   * The e-mail address of whoever runs the crawl (CRAWL_FROM), sent as `From` on every request,
   * as RFC 9110 asks of robots; absent: no From header.
   */
  from?: string;
  /** Product token matched against robots.txt groups. */
  robotsAgent: string;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  totalTimeoutMs: number;
  /** After the grace period, a body slower than this is abandoned (slow-drip servers). */
  minBytesPerSecond: number;
  minRateGraceMs: number;
  maxBodyBytes: number;
  maxRedirects: number;
  /** CIDR ranges and host names that may be reached even if private/loopback. */
  allowNetworks: string[];
  /** Domains (with their subdomains) and addresses never asked for (CRAWL_EXCLUDE_HOSTS). */
  excludeHosts: string[];
  maxPixels: number;
  thumbnailMaxSide: number;
  thumbnailQuality: number;
  /** JPEG (the default: every reader has it) or WebP (about a third smaller at the same quality, and keeps transparency). */
  thumbnailFormat: ThumbnailFormat;
  robotsTtlMs: number;
  /** An unreadable robots.txt (5xx, 429, unreachable) is asked again after this long. */
  robotsRetryMs: number;
  /**
   * After this many unreadable reads in a row, each after waiting out robotsRetryMs, the URLs
   * waiting for it end as errors: with the defaults (3, 5 min) a site whose robots.txt answers
   * 503 for a minute loses nothing, and a dead host ends with error records after ~10 minutes
   * (a host with no DNS record after ~1 minute: robots.ts, NO_SUCH_HOST_RETRY_MS).
   */
  robotsMaxTries: number;
  /**
   * Downloaded images waiting for or in analysis. At this many the worker sends nothing more
   * (those slots count as missed) until it has caught up: fetching faster than the CPU can
   * analyse only piles bytes up in memory.
   */
  maxBacklog: number;
  /**
   * The same in bytes: a source of 50 MB scans would otherwise hold maxBacklog of them (gigabytes)
   * in memory. One body larger than this still goes through, alone.
   */
  maxBacklogBytes: number;
  /**
   * Pixels being decoded for thumbnails at once, across the worker: a decode can take 4 bytes
   * per pixel, and sixteen 100-megapixel PNGs at once would need gigabytes. Images wait their
   * turn; one larger than this is decoded alone.
   */
  maxDecodePixels: number;
  /**
   * Images in analysis and thumbnailing at once across the worker. libvips spreads each image
   * over all cores, so more than a few in flight only adds memory (each holds its decode
   * buffers and its threads' malloc arenas): sharp alone reaches full speed at twice the cores.
   */
  imageConcurrency: number;
  /**
   * Requests open to one site (origin) at once from this worker. A site that takes seconds to
   * answer holds a server process per request; past this many the site's slots pass unsent and
   * the monitor says so (connectionsFullNote), instead of the worker piling up more connections.
   */
  maxConnectionsPerSite: number;
  /**
   * How the worker learns the fewer a site whose link is full bears (politeness/openLimit.ts);
   * the defaults unless given (tests shorten its times).
   */
  openLimit?: Partial<Omit<OpenLimitConfig, 'max'>>;
  /**
   * Read each origin's TDMRep file (/.well-known/tdmrep.json, tdmRep.ts) before its first image:
   * one more request per host, so off unless asked for.
   */
  readTdmRep: boolean;
  /**
   * Store each downloaded image's own bytes too (originalKey in the record), keyed by their
   * sha256 so that one image served under many URLs is stored once. Off unless asked for: the
   * originals are most of a crawl's bytes, and many users want the thumbnails and facts alone.
   */
  keepOriginals: boolean;
  /**
   * A perceptual hash of each thumbnail in its record (dHash, differenceHash.ts). Off unless
   * asked for: decoding the thumbnail again costs about a fifth of a photo's CPU (`npm run
   * bench:thumbnails`: 190 JPEG thumbnails a second at 640 px, 147 with their hashes, 2 cores).
   */
  perceptualHash: boolean;
  /** Every connection to a site goes through this HTTP proxy as a CONNECT tunnel (CRAWL_PROXY, proxy.ts). */
  proxy?: ProxySetting;
}

export type ThumbnailFormat = 'jpeg' | 'webp';
const THUMBNAIL_FORMATS: readonly ThumbnailFormat[] = ['jpeg', 'webp'];

function thumbnailFormatFromEnv(): ThumbnailFormat {
  const raw = envText('CRAWL_THUMBNAIL_FORMAT');
  if (raw === undefined) return 'jpeg';
  const format = raw.trim().toLowerCase().replace(/^jpg$/, 'jpeg');
  if (!(THUMBNAIL_FORMATS as readonly string[]).includes(format)) throw new Error(`CRAWL_THUMBNAIL_FORMAT must be jpeg or webp, got ${JSON.stringify(raw)}`);
  return format as ThumbnailFormat;
}

/**
 * The thumbnail settings this process's environment gives, each only when its variable is set
 * (`crawl run` keeps them in the store's run settings; the others come from there).
 */
export function thumbnailSettingsFromEnv(cfg: PipelineConfig): { format?: ThumbnailFormat; maxSide?: number; quality?: number } {
  return {
    ...(envText('CRAWL_THUMBNAIL_FORMAT') !== undefined ? { format: cfg.thumbnailFormat } : {}),
    ...(envText('CRAWL_THUMBNAIL_MAX_SIDE') !== undefined ? { maxSide: cfg.thumbnailMaxSide } : {}),
    ...(envText('CRAWL_THUMBNAIL_QUALITY') !== undefined ? { quality: cfg.thumbnailQuality } : {}),
  };
}

export const DEFAULT_USER_AGENT = 'PoliteImageCrawler/0.1 (+https://github.com/polite-image-crawler; crawler@example.org)';

/**
 * A number setting: `fallback` when unset or empty, else at least `min` (1 for sizes, counts and
 * timeouts: a 0 there would refuse every image, time every request out at once, or never fetch)
 * and at most `max`.
 */
function num(name: string, fallback: number, min = 1, max = Number.MAX_SAFE_INTEGER): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = decimal(raw);
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new Error(`${name} must be a number ${max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`}, got ${JSON.stringify(raw)}`);
  }
  return n;
}

/**
 * Timers take at most 2^31-1 ms: Node runs a longer one after 1 ms instead, so a timeout of a
 * month would time out every request at once. An hour is far past any sensible request.
 */
const MAX_TIMEOUT_MS = 3_600_000;

/**
 * The User-Agent sent on every request: printable ASCII (anything else would fail every request,
 * which the breaker would count against the sites) naming the crawler and a contact URL.
 */
export function checkUserAgent(ua: string): string {
  if (!/^[\x20-\x7e]+$/.test(ua)) throw new Error(`CRAWL_USER_AGENT must be printable ASCII on one line, got ${JSON.stringify(ua.slice(0, 200))}`);
  if (!/^[A-Za-z0-9._-]+\//.test(ua.trim())) throw new Error(`CRAWL_USER_AGENT must start with a product token and a version (Name/1.0), got ${JSON.stringify(ua)}`);
  if (!/https?:\/\/\S+/.test(ua)) throw new Error(`CRAWL_USER_AGENT must carry a contact URL (http:// or https://) for site owners, got ${JSON.stringify(ua)}`);
  robotsProductToken(ua);
  return ua.trim();
}

/**
 * The name robots.txt groups and X-Robots-Tag directives are matched against: the User-Agent's
 * first product token, except in a browser-styled agent (`Mozilla/5.0 (compatible; MuseumBot/2.1;
 * +https://...)`, as Googlebot and bingbot send), where it is the token after `compatible;`. Taken
 * as `Mozilla`, such a crawler would obey no rule its sites wrote for it.
 */
export function robotsProductToken(ua: string): string {
  const first = ua.trim().split('/')[0]!.trim();
  if (first.toLowerCase() !== 'mozilla') return first;
  const named = /\(([^()]*;\s*)?compatible;\s*([A-Za-z0-9._-]+)\//i.exec(ua);
  if (!named) {
    throw new Error('CRAWL_USER_AGENT starting with Mozilla/ must name the crawler after "compatible;" in its comment, as ' +
      `"Mozilla/5.0 (compatible; YourCrawler/1.0; +https://<your site>/crawler)", which robots.txt rules for YourCrawler then hold for; got ${JSON.stringify(ua)}`);
  }
  return named[2]!;
}

/**
 * CRAWL_FROM: a mailbox (RFC 5322 addr-spec, as RFC 9110's From takes), printable ASCII on one
 * line. A name with it (`Ops <ops@...>`) is not a mailbox; nor is a URL.
 */
export function checkFromAddress(value: string): string {
  const address = value.trim();
  const label = '[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?';
  if (!new RegExp(`^[A-Za-z0-9!#$%&'*+/=?^_\`{|}~.-]+@${label}(?:\\.${label})+$`).test(address) || address.startsWith('.') || address.includes('..')) {
    throw new Error(`CRAWL_FROM must be the e-mail address of whoever runs the crawl, alone (RFC 9110 From: site owners write to it), like crawler-ops@yourdomain.org; got ${JSON.stringify(value.slice(0, 200))}`);
  }
  return address;
}

export function pipelineConfigFromEnv(overrides: Partial<PipelineConfig> = {}): PipelineConfig {
  const userAgent = checkUserAgent(envText('CRAWL_USER_AGENT', DEFAULT_USER_AGENT));
  const from = envText('CRAWL_FROM', '');
  return {
    userAgent,
    ...(from.trim() !== '' ? { from: checkFromAddress(from) } : {}),
    robotsAgent: robotsProductToken(userAgent),
    connectTimeoutMs: num('CRAWL_CONNECT_TIMEOUT_MS', 10_000, 1, MAX_TIMEOUT_MS),
    headersTimeoutMs: num('CRAWL_HEADERS_TIMEOUT_MS', 20_000, 1, MAX_TIMEOUT_MS),
    totalTimeoutMs: num('CRAWL_TOTAL_TIMEOUT_MS', 60_000, 1, MAX_TIMEOUT_MS),
    minBytesPerSecond: num('CRAWL_MIN_BYTES_PER_SECOND', 4_096, 0),
    minRateGraceMs: num('CRAWL_MIN_RATE_GRACE_MS', 5_000, 0, MAX_TIMEOUT_MS),
    // A body is held in one Buffer while it is analysed.
    maxBodyBytes: num('CRAWL_MAX_BODY_BYTES', 50 * 1024 * 1024, 1, bufferConstants.MAX_LENGTH),
    maxRedirects: 5,
    allowNetworks: allowNetworksFromEnv(),
    excludeHosts: checkedExcludedHosts(excludedHostsFromEnv()),
    // sharp takes whole numbers only: 1.5 or 1e99 failed every image as undecodable.
    maxPixels: intFromEnv('CRAWL_MAX_PIXELS', 100_000_000, 1, Number.MAX_SAFE_INTEGER),
    thumbnailMaxSide: intFromEnv('CRAWL_THUMBNAIL_MAX_SIDE', 640, 16, 4_096),
    thumbnailQuality: intFromEnv('CRAWL_THUMBNAIL_QUALITY', 80, 1, 100),
    thumbnailFormat: thumbnailFormatFromEnv(),
    robotsTtlMs: 24 * 3600_000,
    // A crawl of a host that is gone waits tries x interval before its URLs end: an operator in
    // a hurry may shorten it, but not below asking an erroring server once every 10 s.
    robotsRetryMs: num('CRAWL_ROBOTS_RETRY_S', 300, 10, 3_600) * 1000,
    robotsMaxTries: intFromEnv('CRAWL_ROBOTS_TRIES', 3, 1, 20),
    maxBacklog: num('CRAWL_MAX_BACKLOG', 64),
    maxBacklogBytes: num('CRAWL_MAX_BACKLOG_BYTES', 256 * 1024 * 1024),
    maxDecodePixels: num('CRAWL_MAX_DECODE_PIXELS', 400_000_000),
    imageConcurrency: Math.max(1, Math.floor(num('CRAWL_IMAGE_CONCURRENCY', 2 * usableCpus()))),
    maxConnectionsPerSite: intFromEnv('CRAWL_MAX_CONNECTIONS_PER_SITE', 64, 1, 4_096),
    readTdmRep: flagFromEnv('CRAWL_READ_TDMREP', false),
    keepOriginals: flagFromEnv('CRAWL_KEEP_ORIGINALS', false),
    perceptualHash: flagFromEnv('CRAWL_PERCEPTUAL_HASH', false),
    ...(process.env.CRAWL_PROXY?.trim() ? { proxy: parseProxy(process.env.CRAWL_PROXY.trim()) } : {}),
    ...overrides,
  };
}

/** The entries, once each is known to be a host name or address (a bad one throws, naming it, as the worker starts). */
function checkedExcludedHosts(entries: string[]): string[] {
  new ExcludedHosts(entries);
  return entries;
}

/** CRAWL_ALLOW_NETWORKS: the ranges and hosts the network guard opens, comma-separated. */
export function allowNetworksFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.CRAWL_ALLOW_NETWORKS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
}

/**
 * The guard a command's --allow-network list and CRAWL_ALLOW_NETWORKS open together, built as the
 * command starts: a bad entry throws, naming it, before anything is made, kept or connected.
 */
export function commandGuard(allowNetworks: readonly string[]): NetworkGuard {
  const fromEnv = allowNetworksFromEnv();
  // An operator who never typed --allow-network (the variable set in a compose file or a shell
  // profile) would look for the bad entry in the command line.
  try {
    new NetworkGuard(fromEnv);
  } catch (err) {
    throw new Error(`CRAWL_ALLOW_NETWORKS (comma-separated): ${errorText(err)}`);
  }
  return new NetworkGuard([...fromEnv, ...allowNetworks]);
}
