/**
 * RFC 9309 section 2.2.2: a percent-encoded octet of an unreserved character (letters, digits,
 * `-._~`) is decoded before a URL and a rule are compared, and every other one stays encoded.
 * robots-parser 3.0.1 compares the encodings as written: `Disallow: /%7Euser/`
 * let us ask for `/~user/a.jpg`, and `Disallow: /~user/` for a manifest's `/%7Euser/a.jpg`.
 * Both sides go through this before robots-parser sees them; its own normalisation (non-ASCII
 * encoded, hex digits in upper case) then applies to both alike.
 */

const ENCODED = /%([0-9A-Fa-f]{2})/g;
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** `text` with each encoded unreserved character decoded, and other encodings' hex in upper case. */
export function decodeUnreserved(text: string): string {
  if (!text.includes('%')) return text;
  return text.replace(ENCODED, (encoded, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(c) ? c : encoded.toUpperCase();
  });
}

/** A URL as robots.txt rules are matched against it: its path and query decoded so. */
export function robotsMatchUrl(url: string): string {
  if (!url.includes('%')) return url;
  const u = new URL(url);
  return `${u.origin}${decodeUnreserved(u.pathname)}${decodeUnreserved(u.search)}`;
}

/** A robots.txt with the paths of its Allow and Disallow lines decoded so; every other line as it was. */
export function robotsRulesDecoded(text: string): string {
  if (!text.includes('%')) return text;
  return text.replace(/^([ \t]*(?:dis)?allow[ \t]*:[ \t]*)([^#\r\n]*)/gim, (_line, key: string, value: string) => key + decodeUnreserved(value));
}

/**
 * A robots.txt with each User-agent line's value cut to its product token, as Google's parser
 * reads it: `User-agent: PoliteBot (images)` or `User-agent: PoliteBot; see below` names
 * PoliteBot. robots-parser cuts only at a `/` and compared the rest whole, so a group written so
 * for us matched no crawler and its rules fell to `*`'s. RFC 9309 allows only the token there;
 * what follows it is a site owner's note, not another crawler's name.
 */
export function robotsAgentsAsTokens(text: string): string {
  return text.replace(/^([ \t]*user-agent[ \t]*:[ \t]*)([^#\r\n]*)/gim, (line, key: string, value: string) => {
    const token = /^(\*|[A-Za-z0-9._-]+)/.exec(value)?.[1];
    return token === undefined ? line : key + token + value.slice(value.trimEnd().length);
  });
}
