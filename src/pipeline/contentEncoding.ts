import zlib from 'node:zlib';

/**
 * Undoing a response's Content-Encoding. We ask for `identity`, but a server may compress all
 * the same (some CDNs gzip every text file), and a gzip-encoded robots.txt read as text has no
 * rules in it: the crawler would fetch what the site disallows. The size limit applies to the
 * decoded bytes too, checked as they come out of the decoder, so a small gzip bomb costs no
 * more memory than an honest body of the limit's size.
 */

export type Decoded =
  | { body: Buffer; truncated?: boolean }
  | { failure: 'too-large' | 'bad-encoding'; reason: string };

const DECODERS: Record<string, () => zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | zlib.InflateRaw> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};

/**
 * `header`: the Content-Encoding value (codings in the order they were applied).
 * `truncate`: past maxBytes keep the first maxBytes (robots.txt) instead of failing; a body
 * that was cut short on the wire (`inputTruncated`) keeps what decodes of it.
 */
export async function decodeContent(body: Buffer, header: string | undefined, limits: { maxBytes: number; truncate: boolean; inputTruncated?: boolean }): Promise<Decoded> {
  const codings = (header ?? '').split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity');
  const unsupported = codings.find((c) => !DECODERS[c]);
  if (unsupported !== undefined) return { failure: 'bad-encoding', reason: `unsupported content-encoding ${JSON.stringify(unsupported.slice(0, 40))}` };
  let out: Decoded = { body, ...(limits.inputTruncated ? { truncated: true } : {}) };
  for (const coding of codings.reverse()) {
    out = await decodeOne(out.body, coding, limits.maxBytes, limits.truncate, out.truncated === true);
    if ('failure' in out) return out;
  }
  return out;
}

function decodeOne(input: Buffer, coding: string, maxBytes: number, truncate: boolean, inputTruncated: boolean, raw = false): Promise<Decoded> {
  return new Promise((resolve) => {
    const z = raw ? zlib.createInflateRaw() : DECODERS[coding]!();
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (d: Decoded | Promise<Decoded>) => {
      if (settled) return;
      settled = true;
      z.destroy();
      resolve(d);
    };
    z.on('data', (chunk: Buffer) => {
      if (settled) return;
      if (size + chunk.length > maxBytes) {
        if (!truncate) return finish({ failure: 'too-large', reason: `decoded ${coding} body exceeds the ${maxBytes}-byte limit` });
        chunks.push(chunk.subarray(0, maxBytes - size));
        return finish({ body: Buffer.concat(chunks, maxBytes), truncated: true });
      }
      chunks.push(chunk);
      size += chunk.length;
    });
    z.on('end', () => finish({ body: Buffer.concat(chunks, size), ...(inputTruncated ? { truncated: true } : {}) }));
    z.on('error', (err: NodeJS.ErrnoException) => {
      // "deflate" is meant to be zlib-wrapped, but servers have long sent raw deflate under it.
      if (coding === 'deflate' && !raw && size === 0 && err.code === 'Z_DATA_ERROR') return finish(decodeOne(input, coding, maxBytes, truncate, inputTruncated, true));
      // The body was cut at the size limit on purpose: what decoded before the cut is the body.
      if (inputTruncated && size > 0) return finish({ body: Buffer.concat(chunks, size), truncated: true });
      finish({ failure: 'bad-encoding', reason: `${coding} body does not decode: ${err.message}`.slice(0, 200) });
    });
    z.end(input);
  });
}
