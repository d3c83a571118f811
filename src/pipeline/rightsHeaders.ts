import type { IncomingHttpHeaders } from 'node:http';
import { parseHttpDate } from '../shared/httpDate';

/**
 * What an image's response headers say about its use, beside the rights embedded in the file
 * (exifRights, xmpRights, iptcRights): the site owner's word, recorded with the image so that a
 * user of the records can honour it.
 * - `X-Robots-Tag`: robots directives for a file that has no HTML to carry them (`noindex`,
 *   `noimageindex`, and the `noai` / `noimageai` opt-outs from AI training that art sites send),
 *   for every crawler or for one by its product token (`otherbot: noindex` is not ours).
 * - TDMRep (W3C community group's TDM Reservation Protocol): `tdm-reservation: 1` reserves
 *   text-and-data-mining rights, the machine-readable opt-out of EU directive 2019/790 art. 4;
 *   `tdm-policy` names the URL of the terms under which they may be licensed.
 * - `Link: <...>; rel="license"` (RFC 8288's registered relation): the license's URL, the
 *   record's `licenseUrl` when the file itself names none.
 * - `Last-Modified`: when the site says the file last changed, often the nearest thing to a
 *   publication date that a record has (which version of an image a license or a claim means).
 * They are recorded, not acted on: the crawl does what robots.txt allows, and what the image may
 * be used for is the user's decision, made with these in the records.
 */

/** The headers as they came, from the response that brought the image. */
export interface RightsHeaders {
  xRobotsTag?: string[];
  tdmReservation?: string;
  tdmPolicy?: string;
  /** Link header values that name a license (others, such as preloads, are not kept). */
  link?: string[];
  lastModified?: string;
}

/** The record's fields: null where the response said nothing. */
export interface RightsFields {
  /** Directives for us, lower-cased, in order (`["noai", "noimageai"]`). */
  xRobotsTag: string[] | null;
  /** true: TDM rights reserved (`1`); false: not (`0`); null: no or another value. */
  tdmReservation: boolean | null;
  tdmPolicy: string | null;
  /** The first `rel="license"` link's absolute http(s) URL, else null. */
  licenseLink: string | null;
  /** `Last-Modified` as an ISO 8601 UTC time, or null when absent or not an HTTP date. */
  lastModified: string | null;
}

/**
 * Kept at most: a record travels in its grant's heartbeats (up to 500 of them, under Temporal's
 * 2 MB), so a hostile header must not swell it. Known directives are a few characters; a URL
 * longer than the file's own rights fields (500 characters) is left out rather than cut.
 */
const MAX_DIRECTIVES = 10;
const MAX_DIRECTIVE_CHARS = 64;
const MAX_URL_CHARS = 500;

/** The rights headers of a response, or undefined when it has none (the common case: nothing is kept). */
export function readRightsHeaders(headers: IncomingHttpHeaders): RightsHeaders | undefined {
  const tag = headers['x-robots-tag'];
  const reservation = headers['tdm-reservation'];
  const policy = headers['tdm-policy'];
  const links = headers.link;
  const license = (Array.isArray(links) ? links : links === undefined ? [] : [links]).filter((v) => /license/i.test(v));
  // A date is under 40 characters; a longer value is no date and is not carried.
  const modified = headers['last-modified'] !== undefined && headers['last-modified'].length <= 64 ? headers['last-modified'] : undefined;
  if (tag === undefined && reservation === undefined && policy === undefined && license.length === 0 && modified === undefined) return undefined;
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  return {
    ...(tag !== undefined ? { xRobotsTag: Array.isArray(tag) ? tag : [tag] } : {}),
    ...(license.length ? { link: license } : {}),
    ...(reservation !== undefined ? { tdmReservation: first(reservation) } : {}),
    ...(policy !== undefined ? { tdmPolicy: first(policy) } : {}),
    ...(modified !== undefined ? { lastModified: modified } : {}),
  };
}

/**
 * Directives with a value of their own after a colon: a name before a colon that is one of
 * these starts a directive, any other names a crawler (Google's reading of the header).
 */
const DIRECTIVES_WITH_VALUES = new Set(['unavailable_after', 'max-snippet', 'max-image-preview', 'max-video-preview']);

/** The record's fields from a response's rights headers, for our robots product token; `url`: the response's, for relative links. */
export function rightsFields(raw: RightsHeaders | undefined, agent: string, url: string): RightsFields {
  return {
    xRobotsTag: raw?.xRobotsTag ? directivesFor(raw.xRobotsTag, agent.toLowerCase()) : null,
    tdmReservation: raw?.tdmReservation?.trim() === '1' ? true : raw?.tdmReservation?.trim() === '0' ? false : null,
    tdmPolicy: raw?.tdmPolicy?.trim() && raw.tdmPolicy.trim().length <= MAX_URL_CHARS ? raw.tdmPolicy.trim() : null,
    licenseLink: raw?.link ? licenseLink(raw.link, url) : null,
    lastModified: raw?.lastModified ? httpDate(raw.lastModified) : null,
  };
}

/** An HTTP date (shared/httpDate.ts) as ISO 8601. */
function httpDate(value: string): string | null {
  const ms = parseHttpDate(value);
  return ms === undefined ? null : new Date(ms).toISOString();
}

/**
 * The target of the first link whose rel names `license` (RFC 8288: `<target>; rel="a b"`, or
 * rel=license unquoted), resolved against the response's URL; http(s) only.
 */
function licenseLink(values: readonly string[], base: string): string | null {
  for (const value of values) {
    // Each link-value: its <target>, then its parameters up to the next one's "<".
    for (const m of value.matchAll(/<([^>]*)>([^<]*)/g)) {
      const rel = /(?:^|;)\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))/i.exec(m[2]!);
      const types = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/);
      if (!types.includes('license')) continue;
      try {
        const u = new URL(m[1]!.trim(), base);
        if ((u.protocol === 'http:' || u.protocol === 'https:') && u.href.length <= MAX_URL_CHARS) return u.href;
      } catch {
        // Not a URL: the next link may be one.
      }
    }
  }
  return null;
}

function directivesFor(values: readonly string[], agent: string): string[] | null {
  const out: string[] = [];
  for (const value of values) {
    let rest = value.trim();
    const colon = rest.indexOf(':');
    if (colon > 0) {
      const name = rest.slice(0, colon).trim().toLowerCase();
      if (!DIRECTIVES_WITH_VALUES.has(name)) {
        if (name !== agent) continue; // another crawler's
        rest = rest.slice(colon + 1);
      }
    }
    for (const d of rest.split(',')) {
      const directive = d.trim().toLowerCase().replace(/\s*:\s*/, ': ');
      if (directive && directive.length <= MAX_DIRECTIVE_CHARS && out.length < MAX_DIRECTIVES && !out.includes(directive)) out.push(directive);
    }
  }
  return out.length ? out : null;
}
