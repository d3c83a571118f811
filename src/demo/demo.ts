import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { makeDirsSync } from '../shared/makeDirs';
import { Origin } from './origin';

/**
 * The newcomer's demo: four sources on loopback addresses (each its own host, so its own
 * source and rate), generated images, one source that rate-limits with 429 and one that fails.
 */

export interface DemoSite {
  origins: Origin[];
  manifest: string;
  catalog: string;
  /** An earlier demo wrote into the same directory: its port, taken up again unless taken by another. */
  earlier?: { port: number; movedTo?: number };
  stop(): Promise<void>;
}

/** Rights as a photo tool writes them into XMP: the records of these images show them. */
const DEMO_XMP = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:xmpRights="http://ns.adobe.com/xap/1.0/rights/"
 xmpRights:Marked="True" xmpRights:WebStatement="https://creativecommons.org/licenses/by/4.0/">
<dc:creator><rdf:Seq><rdf:li>Demo Photographer</rdf:li></rdf:Seq></dc:creator>
<dc:rights><rdf:Alt><rdf:li xml:lang="x-default">CC BY 4.0, Demo Photographer</rdf:li></rdf:Alt></dc:rights>
</rdf:Description></rdf:RDF></x:xmpmeta>`;

async function makeImage(i: number): Promise<Buffer> {
  const w = 320 + (i % 7) * 160;
  const h = 240 + (i % 5) * 120;
  const image = sharp({ create: { width: w, height: h, channels: 3, background: { r: (i * 37) % 256, g: (i * 91) % 256, b: (i * 53) % 256 } } });
  return (i % 3 === 0 ? image.withXmp(DEMO_XMP) : image).jpeg({ quality: 60 + (i % 4) * 10 }).toBuffer();
}

/**
 * Binds the four origins on one port. `preferred` first, the port of an earlier demo into the
 * same directory: its URLs, and so its manifest, stay the same, and a second run (with
 * --resume-halted, say) takes up the earlier crawl instead of crawling 352 new URLs beside it
 * while the halted source's URLs point at a port nobody serves. Returns the port used.
 */
async function listenAll(origins: Origin[], hosts: string[], preferred?: number): Promise<number> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = attempt === 0 && preferred !== undefined ? preferred : 0;
    try {
      await origins[0]!.start(hosts[0], port);
      for (let k = 1; k < origins.length; k++) await origins[k]!.start(hosts[k], origins[0]!.port);
      return origins[0]!.port;
    } catch {
      await Promise.all(origins.map((o) => o.stop().catch(() => undefined)));
    }
  }
  throw new Error('could not bind the demo origins on 127.0.0.1-4');
}

/** The port of the manifest an earlier demo wrote, if any (a few hundred lines: read whole). */
function earlierPort(manifest: string): number | undefined {
  try {
    const first = fs.readFileSync(manifest, 'utf8').split('\n')[0]!;
    const port = Number(new URL((JSON.parse(first) as { url: string }).url).port);
    return port > 0 ? port : undefined;
  } catch {
    return undefined; // none, or not one of ours
  }
}

export async function startDemoSite(dir: string, scale = 1): Promise<DemoSite> {
  makeDirsSync(dir);
  const images = await Promise.all(Array.from({ length: 12 }, (_, i) => makeImage(i)));
  const museum = new Origin();
  const photos = new Origin();
  const throttled = new Origin();
  const broken = new Origin();
  const serveImages = (o: Origin) => o.route('*', (req, res) => {
    const m = /\/img\/(\d+)\.jpg$/.exec(req.url ?? '');
    if (!m) { res.writeHead(404); res.end(); return; }
    const body = images[Number(m[1]) % images.length]!;
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
    res.end(body);
  });
  serveImages(museum).serve('/robots.txt', 'User-agent: *\nDisallow: /private/\n', 'text/plain');
  serveImages(photos);
  let seen = 0;
  throttled.route('*', (req, res) => {
    if (req.url === '/robots.txt') { res.writeHead(404); res.end(); return; }
    // Every 40th image request is told to come back in 5 seconds.
    if (++seen % 40 === 0) { res.writeHead(429, { 'retry-after': '5' }); res.end(); return; }
    const body = images[seen % images.length]!;
    res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
    res.end(body);
  });
  broken.route('*', (req, res) => { res.writeHead(req.url === '/robots.txt' ? 404 : 500); res.end(); });
  const origins = [museum, photos, throttled, broken];
  const manifest = path.join(dir, 'demo-manifest.ndjson');
  const before = earlierPort(manifest);
  const port = await listenAll(origins, ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4'], before);

  const lines: string[] = [];
  const add = (o: Origin, p: string, source?: string) => lines.push(JSON.stringify({ url: o.url(p), ...(source ? { source } : {}) }));
  const n = (k: number) => Math.max(1, Math.round(k * scale));
  for (let i = 0; i < n(40); i++) add(museum, `/img/${i}.jpg`, 'museum');
  add(museum, '/private/0.jpg', 'museum');
  add(museum, '/img/missing.png', 'museum');
  for (let i = 0; i < n(150); i++) add(photos, `/img/${i}.jpg`, 'photos');
  for (let i = 0; i < n(100); i++) add(throttled, `/img/${i}.jpg`, 'throttled');
  for (let i = 0; i < 60; i++) add(broken, `/img/${i}.jpg`, 'broken');
  lines.push('this line is not JSON');
  lines.push(JSON.stringify({ url: 'ftp://example.org/x.jpg' }));
  fs.writeFileSync(manifest, lines.join('\n') + '\n');
  const catalog = path.join(dir, 'demo-catalog.json');
  fs.writeFileSync(catalog, JSON.stringify([
    { name: 'museum', imageCount: 4_000, rate: 2 },
    { name: 'photos', imageCount: 2_000_000, rate: 25, burst: 2 },
    { name: 'throttled', rate: 10 },
    { name: 'broken', rate: 5 },
  ], null, 2));
  const earlier = before === undefined ? undefined : { port: before, ...(before !== port ? { movedTo: port } : {}) };
  return { origins, manifest, catalog, ...(earlier ? { earlier } : {}), stop: async () => { await Promise.all(origins.map((o) => o.stop())); } };
}
