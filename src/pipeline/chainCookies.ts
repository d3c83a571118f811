import { getSetCookies, Headers } from 'undici';
import type { ChainCookie } from '../shared/types';

/**
 * Cookies set by the redirects of one URL, sent on that URL's later hops. Some sites test for
 * cookies before serving an image: a 302 back to the same URL with a Set-Cookie, then the image
 * for a client that sends it. A crawler without cookies gets the 302 again until it gives up
 * (six requests a URL, each ending "more than 5 redirects"). Nothing is kept across URLs: every
 * image is asked for as a stateless client would, and a cookie lives only as long as one chain.
 *
 * Host-only, whatever a Domain attribute says: telling a site's own domain from a public suffix
 * (`co.uk`) takes a public-suffix list, and the chains this is for stay on one host. A cookie
 * goes back only to the host that set it, on a path it covers, and a Secure one only over https.
 *
 * A chain's cookies travel with its hop in heartbeats and, when a grant ends part-way, in the
 * monitor's history: a wall's test cookie is a few bytes, and more than this is left out (the
 * chain then ends as endless redirects, as without cookies).
 */
export const MAX_CHAIN_COOKIES = 8;
export const MAX_CHAIN_COOKIE_CHARS = 1_024;

/** The chain's cookies after a response from `from` set `setCookie` (raw Set-Cookie values). */
export function absorbSetCookies(jar: readonly ChainCookie[] | undefined, setCookie: readonly string[], from: URL, nowMs = Date.now()): ChainCookie[] | undefined {
  if (setCookie.length === 0) return jar && jar.length ? [...jar] : undefined;
  const headers = new Headers();
  for (const v of setCookie) headers.append('set-cookie', v);
  let out = [...(jar ?? [])];
  const host = from.hostname.toLowerCase();
  for (const c of getSetCookies(headers)) {
    if (!c.name) continue;
    if (c.domain !== undefined && !domainMatches(host, c.domain)) continue; // RFC 6265 5.3 step 6: ignored
    if (c.secure && from.protocol !== 'https:') continue; // RFC 6265bis: only a secure origin sets one
    const path = c.path?.startsWith('/') ? c.path : defaultPath(from.pathname);
    out = out.filter((o) => !(o.host === host && o.path === path && o.name === c.name));
    const gone = (c.maxAge !== undefined && c.maxAge <= 0) || (c.expires !== undefined && new Date(c.expires).getTime() <= nowMs);
    if (gone) continue;
    const cookie: ChainCookie = { host, path, name: c.name, value: c.value, ...(c.secure ? { secure: true as const } : {}) };
    if (out.length >= MAX_CHAIN_COOKIES || chars(out) + c.name.length + c.value.length > MAX_CHAIN_COOKIE_CHARS) continue;
    out.push(cookie);
  }
  return out.length ? out : undefined;
}

/** The Cookie header for a request to `to`, or undefined when no cookie of the chain applies. */
export function cookieHeader(jar: readonly ChainCookie[] | undefined, to: URL): string | undefined {
  if (!jar?.length) return undefined;
  const host = to.hostname.toLowerCase();
  // RFC 6265 5.4: longer paths first.
  const sent = jar.filter((c) => c.host === host && pathMatches(to.pathname, c.path) && (!c.secure || to.protocol === 'https:'))
    .sort((a, b) => b.path.length - a.path.length);
  return sent.length ? sent.map((c) => `${c.name}=${c.value}`).join('; ') : undefined;
}

function chars(jar: readonly ChainCookie[]): number {
  return jar.reduce((n, c) => n + c.name.length + c.value.length, 0);
}

/** RFC 6265 5.1.3 (undici has already dropped a leading dot). */
function domainMatches(host: string, domain: string): boolean {
  const d = domain.toLowerCase();
  return host === d || (host.endsWith(`.${d}`) && !/^[\d.]+$/.test(host));
}

/** RFC 6265 5.1.4: the request path up to its last "/". */
function defaultPath(pathname: string): string {
  const last = pathname.lastIndexOf('/');
  return last <= 0 ? '/' : pathname.slice(0, last);
}

function pathMatches(requestPath: string, cookiePath: string): boolean {
  if (requestPath === cookiePath) return true;
  return requestPath.startsWith(cookiePath) && (cookiePath.endsWith('/') || requestPath[cookiePath.length] === '/');
}
