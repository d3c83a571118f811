/**
 * A benchmark origin in its own process (a real site is never inside the crawler's process):
 * serves DIR/<n>.jpg as /img/<n>.jpg (and /<anything>/<n>.jpg) on HOST:PORT, robots.txt allows all.
 * Prints "listening <port>" when ready.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';

const [dir, hostsArg = '127.0.0.1', portArg = '0'] = process.argv.slice(2);
const files = fs.readdirSync(dir!).filter((f) => f.endsWith('.jpg'));
const bodies = files.map((f) => fs.readFileSync(path.join(dir!, f)));
const hosts = hostsArg.split(',');
let port = Number(portArg);

const handler: http.RequestListener = (req, res) => {
  if (req.url === '/robots.txt') { res.writeHead(200, { 'content-type': 'text/plain' }); res.end('User-agent: *\nAllow: /\n'); return; }
  const i = Number(/\/(\d+)\.jpg$/.exec(req.url ?? '')?.[1] ?? -1);
  const body = i >= 0 ? bodies[i % bodies.length] : undefined;
  if (!body) { res.writeHead(404); res.end(); return; }
  res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
  res.end(body);
};

(async () => {
  for (const host of hosts) {
    if (!host.startsWith('127.')) throw new Error('loopback only');
    const server = http.createServer(handler);
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(port, host, resolve));
    port = (server.address() as AddressInfo).port;
  }
  process.stdout.write(`listening ${port}\n`);
})();
