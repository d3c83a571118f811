/**
 * The URLs of a manifest seen so far, to crawl each once however often it is listed. A Set of
 * strings costs ~100 bytes per URL; this keeps a 64-bit fingerprint per URL in an open-addressing
 * table, ~11-22 bytes per URL, so 10 million URLs take ~200 MB at most. Two different URLs share a
 * fingerprint with probability ~n^2 / 2^65 (3e-4 for 100 million URLs); the second would be
 * reported as a duplicate, never dropped silently.
 */
export class SeenUrls {
  /** Pairs of 32-bit halves; (0, 0) marks a free slot. */
  private table = new Uint32Array(2 * 1024);
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Bytes the table takes now. */
  get bytes(): number {
    return this.table.byteLength;
  }

  /** Adds `url`; false when it was seen before. */
  add(url: string): boolean {
    hash(url);
    return this.addFingerprint(hashHi, hashLo);
  }

  /** Adds a URL by its fingerprint (see fingerprint()); false when it was there before. */
  addFingerprint(hi: number, lo: number): boolean {
    if (hi === 0 && lo === 0) lo = 1;
    if (this.insert(this.table, hi, lo)) {
      this.count++;
      if (this.count * 10 > (this.table.length / 2) * 7) this.grow();
      return true;
    }
    return false;
  }

  /** Whether `url` was added (or a URL with its fingerprint). */
  has(url: string): boolean {
    hash(url);
    return this.hasFingerprint(hashHi, hashLo);
  }

  /** Whether a URL with this fingerprint (see fingerprint()) was added. */
  hasFingerprint(hi: number, lo: number): boolean {
    if (hi === 0 && lo === 0) lo = 1;
    return !isFree(this.table, slot(this.table, hi, lo));
  }

  private insert(table: Uint32Array, hi: number, lo: number): boolean {
    const i = slot(table, hi, lo);
    if (!isFree(table, i)) return false;
    table[2 * i] = hi;
    table[2 * i + 1] = lo;
    return true;
  }

  private grow(): void {
    const old = this.table;
    const next = new Uint32Array(old.length * 2);
    for (let i = 0; i < old.length; i += 2) if (old[i] !== 0 || old[i + 1] !== 0) this.insert(next, old[i]!, old[i + 1]!);
    this.table = next;
  }
}

/** The pair index holding (hi, lo) in `table`, or else the free pair (0, 0) where it would go. */
function slot(table: Uint32Array, hi: number, lo: number): number {
  const mask = table.length / 2 - 1;
  for (let i = (lo ^ Math.imul(hi, 0x9e3779b1)) & mask; ; i = (i + 1) & mask) {
    const h = table[2 * i]!;
    const l = table[2 * i + 1]!;
    if ((h === hi && l === lo) || (h === 0 && l === 0)) return i;
  }
}

const isFree = (table: Uint32Array, i: number) => table[2 * i] === 0 && table[2 * i + 1] === 0;

/** Two independent 32-bit string hashes (cyrb53's mixing, both halves kept whole). */
export function fingerprint(s: string): [number, number] {
  hash(s);
  return [hashHi, hashLo];
}

/** 53 bits of fingerprint() in one number, exact in a double: sortable in a Float64Array. */
export function fingerprint53(s: string): number {
  hash(s);
  return (hashHi & 0x1fffff) * 0x100000000 + hashLo;
}

/** fingerprint53() of the ASCII text in bytes [from, to) of `buf`, without making a string of it. */
export function fingerprint53Ascii(buf: Uint8Array, from: number, to: number): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = from; i < to; i++) {
    const c = buf[i]!;
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  mix(h1, h2);
  return (hashHi & 0x1fffff) * 0x100000000 + hashLo;
}

// hash()'s result, without allocating: it runs once per manifest line.
let hashHi = 0;
let hashLo = 0;

function hash(s: string): void {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  mix(h1, h2);
}

function mix(h1: number, h2: number): void {
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  hashHi = h1 >>> 0;
  hashLo = h2 >>> 0;
}
