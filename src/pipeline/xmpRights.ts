import { XMLParser } from 'fast-xml-parser';
import { isPlainObject } from '../shared/plainObject';

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

/**
 * A JPEG segment holds at most 64 KB of XMP; photo tools' packets are a few KB. Larger ones are
 * not read: parsing 900 KB of list items took ~0.3 s of the thread that paces requests.
 */
const MAX_XMP_CHARS = 256 * 1024;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  parseTagValue: false,
  parseAttributeValue: false,
  htmlEntities: false,
  isArray: (name) => name === 'rdf:li' || name === 'rdf:Description',
});

const RIGHTS_ELEMENTS = ['dc:creator', 'dc:rights', 'plus:Licensor', 'xmpRights:WebStatement'];
/** More of one element than any tool writes: the rest of a packet that repeats it is not read. */
const MAX_PER_ELEMENT = 8;

export function readXmpRights(xmp: string | undefined): XmpRights {
  // XMP has no DTD; one in an image from the web would be there for entity expansion.
  if (!xmp || xmp.length > MAX_XMP_CHARS || /<!(DOCTYPE|ENTITY)/i.test(xmp)) return NONE;
  // Only the rights elements are parsed, gathered into one description: a whole packet from a
  // photo tool (hundreds of develop settings) took ~0.3 ms per 3 KB to parse, on the thread
  // that paces requests, for four fields.
  const elements = RIGHTS_ELEMENTS.flatMap((name) => elementsNamed(xmp, name));
  const attribute = webStatementAttribute(xmp);
  if (elements.length === 0 && !attribute) return NONE;
  let doc: unknown;
  try {
    doc = parser.parse(`<rdf:Description${attribute ? ` xmpRights:WebStatement=${attribute}` : ''}>${elements.join('')}</rdf:Description>`);
  } catch {
    return NONE; // broken XMP does not make the image unusable
  }
  const d = (doc as { 'rdf:Description'?: unknown[] })['rdf:Description']?.[0];
  if (!isPlainObject(d)) return NONE;
  // An element that came more than once (several descriptions gathered into one) is a list: its first counts.
  const one = (v: unknown) => (Array.isArray(v) ? v[0] : v);
  const webStatement = one(d['xmpRights:WebStatement']);
  return {
    creator: joined(items(one(d['dc:creator']))),
    rights: langAlt(one(d['dc:rights'])),
    licenseUrl: text(d['@xmpRights:WebStatement']) ?? text(webStatement) ?? resource(webStatement) ?? licensorUrl(one(d['plus:Licensor'])),
  };
}

/**
 * The elements `<name ...>...</name>` or `<name .../>`, found with indexOf: a lazy regular
 * expression rescanned the rest of the packet for every unclosed start tag (a packet of 240 KB
 * of them took 2.3 s). Every search here starts past the last, so a packet is read once per name.
 */
function elementsNamed(xmp: string, name: string): string[] {
  const found: string[] = [];
  for (let at = 0; found.length < MAX_PER_ELEMENT;) {
    const start = xmp.indexOf(`<${name}`, at);
    if (start < 0) break;
    const after = xmp[start + name.length + 1];
    if (after !== '>' && after !== '/' && !/\s/.test(after ?? '')) {
      at = start + 1; // a longer name that starts the same
      continue;
    }
    const tagEnd = xmp.indexOf('>', start);
    if (tagEnd < 0) break;
    if (xmp[tagEnd - 1] === '/') {
      found.push(xmp.slice(start, tagEnd + 1));
      at = tagEnd + 1;
      continue;
    }
    const closeEnd = endTagEnd(xmp, name, tagEnd);
    if (closeEnd < 0) break; // no end tag after this one: none after any later start either
    found.push(xmp.slice(start, closeEnd + 1));
    at = closeEnd + 1;
  }
  return found;
}

/** Where `</name>` (not `</nameLonger>`) ends, searching from `from`; -1 when there is none. */
function endTagEnd(xmp: string, name: string, from: number): number {
  for (let at = from; ;) {
    const close = xmp.indexOf(`</${name}`, at);
    if (close < 0) return -1;
    const rest = /^\s*>/.exec(xmp.slice(close + name.length + 2, close + name.length + 66));
    if (rest) return close + name.length + 2 + rest[0].length - 1;
    at = close + 1;
  }
}

/** The quoted value of the first `xmpRights:WebStatement="..."` attribute. */
function webStatementAttribute(xmp: string): string | undefined {
  const name = 'xmpRights:WebStatement';
  for (let at = 0; ;) {
    const start = xmp.indexOf(name, at);
    if (start < 0) return undefined;
    const m = /^\s*=\s*(["'])/.exec(xmp.slice(start + name.length, start + name.length + 64));
    if (m && /\s/.test(xmp[start - 1] ?? '')) {
      const open = start + name.length + m[0].length;
      const close = xmp.indexOf(m[1]!, open);
      return close < 0 ? undefined : xmp.slice(open - 1, close + 1);
    }
    at = start + name.length;
  }
}

type Node = Record<string, unknown>;

/** Every value under `key` anywhere in the tree (RDF nests descriptions in several ways). */
function collect(v: unknown, key: string, out: Node[], depth: number): void {
  if (depth > 32) return;
  if (Array.isArray(v)) {
    for (const x of v) collect(x, key, out, depth + 1);
  } else if (isPlainObject(v)) {
    for (const [k, x] of Object.entries(v)) {
      if (k === key) for (const d of [x].flat()) if (isPlainObject(d)) out.push(d);
      collect(x, key, out, depth + 1);
    }
  }
}

function text(v: unknown): string | null {
  if (typeof v === 'string') return v.trim() || null;
  if (typeof v === 'number') return String(v);
  if (isPlainObject(v)) return text(v['#text']);
  return null;
}

function resource(v: unknown): string | null {
  return isPlainObject(v) ? text(v['@rdf:resource']) : null;
}

/** The rdf:li items of an rdf:Seq, rdf:Bag or rdf:Alt (or a plain value). */
function items(v: unknown): unknown[] {
  if (!isPlainObject(v)) return v === undefined ? [] : [v];
  const list = v['rdf:Seq'] ?? v['rdf:Bag'] ?? v['rdf:Alt'];
  if (isPlainObject(list) && Array.isArray(list['rdf:li'])) return list['rdf:li'];
  return [v];
}

function joined(list: unknown[]): string | null {
  const names = list.map(text).filter((s): s is string => s !== null);
  return names.length > 0 ? names.join('; ') : null;
}

function langAlt(v: unknown): string | null {
  const list = items(v);
  const preferred = list.find((li) => isPlainObject(li) && li['@xml:lang'] === 'x-default') ?? list[0];
  return text(preferred);
}

function licensorUrl(v: unknown): string | null {
  for (const li of items(v)) {
    if (!isPlainObject(li)) continue;
    const nested: Node[] = [li];
    collect(li, 'rdf:Description', nested, 0);
    for (const n of nested) {
      const url = text(n['@plus:LicensorURL']) ?? text(n['plus:LicensorURL']);
      if (url) return url;
    }
  }
  return null;
}
