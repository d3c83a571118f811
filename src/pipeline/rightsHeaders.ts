import type { IncomingHttpHeaders } from 'node:http';

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
 * They are recorded, not acted on: the crawl does what robots.txt allows, and what the image may
 * be used for is the user's decision, made with these in the records.
 */

/** The headers as they came, from the response that brought the image. */
export interface RightsHeaders {
  xRobotsTag?: string[];
  tdmReservation?: string;
  tdmPolicy?: string;
}

/** The record's fields: null where the response said nothing. */
export interface RightsFields {
  /** Directives for us, lower-cased, in order (`["noai", "noimageai"]`). */
  xRobotsTag: string[] | null;
  /** true: TDM rights reserved (`1`); false: not (`0`); null: no or another value. */
  tdmReservation: boolean | null;
  tdmPolicy: string | null;
}

/** Kept at most, so that a hostile header cannot swell the record (header size is capped by undici at 16 KiB in all). */
const MAX_DIRECTIVES = 20;
const MAX_POLICY_CHARS = 2_048;

/** The rights headers of a response, or undefined when it has none (the common case: nothing is kept). */
export function readRightsHeaders(headers: IncomingHttpHeaders): RightsHeaders | undefined {
  const tag = headers['x-robots-tag'];
  const reservation = headers['tdm-reservation'];
  const policy = headers['tdm-policy'];
  if (tag === undefined && reservation === undefined && policy === undefined) return undefined;
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  return {
    ...(tag !== undefined ? { xRobotsTag: Array.isArray(tag) ? tag : [tag] } : {}),
    ...(reservation !== undefined ? { tdmReservation: first(reservation) } : {}),
    ...(policy !== undefined ? { tdmPolicy: first(policy) } : {}),
  };
}

/**
 * Directives with a value of their own after a colon: a name before a colon that is one of
 * these starts a directive, any other names a crawler (Google's reading of the header).
 */
const DIRECTIVES_WITH_VALUES = new Set(['unavailable_after', 'max-snippet', 'max-image-preview', 'max-video-preview']);

/** The record's fields from a response's rights headers, for our robots product token. */
export function rightsFields(raw: RightsHeaders | undefined, agent: string): RightsFields {
  return {
    xRobotsTag: raw?.xRobotsTag ? directivesFor(raw.xRobotsTag, agent.toLowerCase()) : null,
    tdmReservation: raw?.tdmReservation?.trim() === '1' ? true : raw?.tdmReservation?.trim() === '0' ? false : null,
    tdmPolicy: raw?.tdmPolicy?.trim() ? raw.tdmPolicy.trim().slice(0, MAX_POLICY_CHARS) : null,
  };
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
      if (directive && out.length < MAX_DIRECTIVES && !out.includes(directive)) out.push(directive);
    }
  }
  return out.length ? out : null;
}
