import { XMLParser } from 'fast-xml-parser';

/**
 * Rights fields of an image's XMP packet. Photo tools (Lightroom, Photoshop, Bridge and the
 * stock agencies' uploaders) write creator and copyright there, often with the EXIF fields
 * empty; the license link (IPTC's "Web Statement of Rights") exists only there.
 */
export interface XmpRights {
  /** dc:creator, several names joined with "; ". */
  creator: string | null;
  /** dc:rights, the x-default language when there are several. */
  rights: string | null;
  /** xmpRights:WebStatement, else the first plus:LicensorURL. */
  licenseUrl: string | null;
}

const NONE: XmpRights = { creator: null, rights: null, licenseUrl: null };

/** JPEG's extended XMP tops out near this; anything larger is not worth parsing. */
const MAX_XMP_CHARS = 1 << 20;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  parseTagValue: false,
  parseAttributeValue: false,
  htmlEntities: false,
  isArray: (name) => name === 'rdf:li' || name === 'rdf:Description',
});

/** The elements that hold rights (the attribute form of the web statement is read apart). */
const RIGHTS_ELEMENTS = /<(dc:creator|dc:rights|plus:Licensor|xmpRights:WebStatement)\b(?:[^>]*\/>|[\s\S]*?<\/\1\s*>)/g;
const WEB_STATEMENT_ATTRIBUTE = /\sxmpRights:WebStatement\s*=\s*("[^"]*"|'[^']*')/;

export function readXmpRights(xmp: string | undefined): XmpRights {
  // XMP has no DTD; one in an image from the web would be there for entity expansion.
  if (!xmp || xmp.length > MAX_XMP_CHARS || /<!(DOCTYPE|ENTITY)/i.test(xmp)) return NONE;
  // Only the rights elements are parsed, gathered into one description: a whole packet from a
  // photo tool (hundreds of develop settings) took ~0.3 ms per 3 KB to parse, on the thread
  // that paces requests, for four fields.
  const elements = xmp.match(RIGHTS_ELEMENTS);
  const attribute = WEB_STATEMENT_ATTRIBUTE.exec(xmp)?.[1];
  if (!elements && !attribute) return NONE;
  let doc: unknown;
  try {
    doc = parser.parse(`<rdf:Description${attribute ? ` xmpRights:WebStatement=${attribute}` : ''}>${(elements ?? []).join('')}</rdf:Description>`);
  } catch {
    return NONE; // broken XMP does not make the image unusable
  }
  const descriptions: Node[] = [];
  collect(doc, 'rdf:Description', descriptions, 0);
  const first = (pick: (d: Node) => string | null) => descriptions.reduce<string | null>((found, d) => found ?? pick(d), null);
  return {
    creator: first((d) => joined(items(d['dc:creator']))),
    rights: first((d) => langAlt(d['dc:rights'])),
    licenseUrl: first((d) => text(d['@xmpRights:WebStatement']) ?? text(d['xmpRights:WebStatement']) ?? resource(d['xmpRights:WebStatement']))
      ?? first((d) => licensorUrl(d['plus:Licensor'])),
  };
}

type Node = Record<string, unknown>;

const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every value under `key` anywhere in the tree (RDF nests descriptions in several ways). */
function collect(v: unknown, key: string, out: Node[], depth: number): void {
  if (depth > 32) return;
  if (Array.isArray(v)) {
    for (const x of v) collect(x, key, out, depth + 1);
  } else if (isNode(v)) {
    for (const [k, x] of Object.entries(v)) {
      if (k === key) for (const d of [x].flat()) if (isNode(d)) out.push(d);
      collect(x, key, out, depth + 1);
    }
  }
}

function text(v: unknown): string | null {
  if (typeof v === 'string') return v.trim() || null;
  if (typeof v === 'number') return String(v);
  if (isNode(v)) return text(v['#text']);
  return null;
}

function resource(v: unknown): string | null {
  return isNode(v) ? text(v['@rdf:resource']) : null;
}

/** The rdf:li items of an rdf:Seq, rdf:Bag or rdf:Alt (or a plain value). */
function items(v: unknown): unknown[] {
  if (!isNode(v)) return v === undefined ? [] : [v];
  const list = v['rdf:Seq'] ?? v['rdf:Bag'] ?? v['rdf:Alt'];
  if (isNode(list) && Array.isArray(list['rdf:li'])) return list['rdf:li'];
  return [v];
}

function joined(list: unknown[]): string | null {
  const names = list.map(text).filter((s): s is string => s !== null);
  return names.length > 0 ? names.join('; ') : null;
}

function langAlt(v: unknown): string | null {
  const list = items(v);
  const preferred = list.find((li) => isNode(li) && li['@xml:lang'] === 'x-default') ?? list[0];
  return text(preferred);
}

function licensorUrl(v: unknown): string | null {
  for (const li of items(v)) {
    if (!isNode(li)) continue;
    const nested: Node[] = [li];
    collect(li, 'rdf:Description', nested, 0);
    for (const n of nested) {
      const url = text(n['@plus:LicensorURL']) ?? text(n['plus:LicensorURL']);
      if (url) return url;
    }
  }
  return null;
}
