import { metadataText } from './metadataText';

/**
 * Rights fields of an IPTC-IIM block, the metadata of news and agency photos before XMP (and
 * still written beside it by Photoshop and Photo Mechanic). sharp hands over a JPEG's APP13
 * segment whole: Photoshop's image resources, of which 0x0404 holds the IIM datasets.
 */
export interface IptcRights {
  /** 2:80 By-line, several joined with "; ". */
  byline: string | null;
  /** 2:116 Copyright Notice. */
  copyright: string | null;
}

const NONE: IptcRights = { byline: null, copyright: null };
const PHOTOSHOP = Buffer.from('Photoshop 3.0\0', 'latin1');
const IPTC_RESOURCE = 0x0404;

export function readIptcRights(block: Buffer | undefined): IptcRights {
  if (!block || block.length === 0) return NONE;
  const iim = block[0] === 0x1c ? block : iimResource(block);
  return iim ? datasets(iim) : NONE;
}

/** The IPTC resource among Photoshop's image resources ("8BIM", id, padded name, size, data). */
function iimResource(b: Buffer): Buffer | undefined {
  let at = b.subarray(0, PHOTOSHOP.length).equals(PHOTOSHOP) ? PHOTOSHOP.length : 0;
  while (at + 12 <= b.length && b.toString('latin1', at, at + 4) === '8BIM') {
    const id = b.readUInt16BE(at + 4);
    const nameLength = b[at + 6]!;
    const sizeAt = at + 6 + ((nameLength + 2) & ~1); // the name's length byte and the name, padded to even
    if (sizeAt + 4 > b.length) return undefined;
    const size = b.readUInt32BE(sizeAt);
    const dataAt = sizeAt + 4;
    if (dataAt + size > b.length) return undefined;
    if (id === IPTC_RESOURCE) return b.subarray(dataAt, dataAt + size);
    at = dataAt + size + (size & 1);
  }
  return undefined;
}

/** Datasets: 0x1C, record, dataset, 2-byte size (extended sizes are skipped over), value. */
function datasets(b: Buffer): IptcRights {
  const bylines: Buffer[] = [];
  let copyright: Buffer | undefined;
  let declaredUtf8 = false;
  let at = 0;
  while (at + 5 <= b.length && b[at] === 0x1c) {
    const record = b[at + 1]!;
    const dataset = b[at + 2]!;
    let size = b.readUInt16BE(at + 3);
    let valueAt = at + 5;
    if (size & 0x8000) {
      // An extended dataset: the next (size & 0x7fff) bytes hold its length.
      const lengthBytes = size & 0x7fff;
      if (lengthBytes > 4 || valueAt + lengthBytes > b.length) break;
      size = lengthBytes === 0 ? 0 : b.readUIntBE(valueAt, lengthBytes);
      valueAt += lengthBytes;
    }
    if (valueAt + size > b.length) break;
    const value = b.subarray(valueAt, valueAt + size);
    // 1:90 "ESC % G" declares UTF-8; without it, UTF-8 when the bytes are valid UTF-8, else Latin-1.
    if (record === 1 && dataset === 90) declaredUtf8 = value.equals(Buffer.from([0x1b, 0x25, 0x47]));
    if (record === 2 && dataset === 80) bylines.push(value);
    if (record === 2 && dataset === 116) copyright ??= value;
    at = valueAt + size;
  }
  const decode = (v: Buffer) => text(v, declaredUtf8);
  const names = bylines.map(decode).filter((s): s is string => s !== null);
  return { byline: names.length > 0 ? names.join('; ') : null, copyright: copyright ? decode(copyright) : null };
}

function text(v: Buffer, declaredUtf8: boolean): string | null {
  const s = metadataText(v, declaredUtf8 ? 'utf8' : 'latin1').replace(/\0+$/g, '').trim();
  return s === '' ? null : s;
}
