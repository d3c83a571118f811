import { CookieJar } from 'tough-cookie';
import type { ChainCookie } from '../shared/types';

/**
 * Cookies set by the redirects of one URL, sent on that URL's later hops. Some sites test for
 * cookies before serving an image: a 302 back to the same URL (or through a check page on the
 * site's main host) with a Set-Cookie, then the image for a client that sends it. A crawler
 * without cookies gets the 302 again until it gives up (six requests a URL, each ending "more
 * than 5 redirects"). Nothing is kept across URLs: every image is asked for as a stateless
 * client would, and a cookie lives only as long as one chain.
 *
 * RFC 6265 by tough-cookie: a Domain cookie reaches the site's other hosts but never a public
 * suffix (`co.uk`, by its list), paths are matched, a Secure cookie is neither set by nor sent
 * over http, and expiry is honoured. The chain keeps the Set-Cookie values as they came, with
 * where from, and a jar is made from them for each hop: that is what travels with the hop in
 * heartbeats and, when a grant ends part-way, in the monitor's history.
 */

/**
 * A wall's test cookie is a few dozen characters; past this many values, or characters in all,
 * the rest are left out (the chain then ends as endless redirects, as without cookies).
 */
export const MAX_CHAIN_COOKIES = 8;
export const MAX_CHAIN_COOKIE_CHARS = 2_048;

/** The chain's cookies after a response from `from` set `setCookie` (raw Set-Cookie values). */
export function absorbSetCookies(chain: readonly ChainCookie[] | undefined, setCookie: readonly string[], from: URL): ChainCookie[] | undefined {
  const out = [...(chain ?? [])];
  // Where a cookie came from decides its host, default path and whether it may be Secure: the
  // query never does, and a signed URL's would be most of the size.
  const where = `${from.origin}${from.pathname}`;
  let chars = out.reduce((n, c) => n + c.from.length + c.setCookie.length, 0);
  for (const value of setCookie) {
    if (out.length >= MAX_CHAIN_COOKIES) break;
    if (chars + where.length + value.length > MAX_CHAIN_COOKIE_CHARS) continue;
    out.push({ from: where, setCookie: value });
    chars += where.length + value.length;
  }
  return out.length ? out : undefined;
}

/** The Cookie header for a request to `to`, or undefined when no cookie of the chain applies. */
export function cookieHeader(chain: readonly ChainCookie[] | undefined, to: URL): string | undefined {
  if (!chain?.length) return undefined;
  const jar = new CookieJar();
  // A cookie the jar refuses (another site's domain, a public suffix, Secure over http, not a
  // cookie at all) is left out, as a browser leaves it.
  for (const c of chain) jar.setCookieSync(c.setCookie, c.from, { ignoreError: true });
  return jar.getCookieStringSync(to.href) || undefined;
}
