import { Origin } from '../../src/demo/origin';
import { jpeg } from './images';

// The test origin is the same one the demo uses.
export * from '../../src/demo/origin';

/** A site that answers every path with one JPEG, and robots.txt and /missing... with 404 (no rules, link rot). */
export async function imageOrigin(host = '127.0.0.1', port = 0): Promise<Origin> {
  const body = await jpeg(400, 300);
  return new Origin().route('*', (req, res) => {
    if (req.url === '/robots.txt' || req.url?.startsWith('/missing')) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
    res.end(body);
  }).start(host, port);
}
