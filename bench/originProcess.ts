/**
 * A benchmark origin in its own process (a real site is never inside the crawler's process):
 * serves DIR/<n>.jpg as /img/<n>.jpg (and /<anything>/<n>.jpg) on HOST:PORT, robots.txt allows all;
 * paths under /many/ get DIR/small.jpg. Prints "listening <port>" when ready. With a log file
 * argument, it writes "<arrival ms> <host> <path>" per request there when it gets SIGTERM.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';

const [dir, hostsArg = '127.0.0.1', portArg = '0', logFile] = process.argv.slice(2);
const files = fs.readdirSync(dir!).filter((f) => /^\d+\.jpg$/.test(f)).sort((a, b) => parseInt(a) - parseInt(b));
const smallPath = path.join(dir!, 'small.jpg');
const small = fs.existsSync(smallPath) ? fs.readFileSync(smallPath) : undefined;
const arrivals: string[] = [];
const bodies = files.map((f) => fs.readFileSync(path.join(dir!, f)));
const hosts = hostsArg.split(',');
let port = Number(portArg);

const handler: http.RequestListener = (req, res) => {
  if (logFile) arrivals.push(`${Date.now()} ${req.headers.host ?? ''} ${req.url ?? ''}`);
  if (req.url === '/robots.txt') { res.writeHead(200, { 'content-type': 'text/plain' }); res.end('User-agent: *\nAllow: /\n'); return; }
  const i = Number(/\/(\d+)\.jpg$/.exec(req.url ?? '')?.[1] ?? -1);
  const body = req.url?.startsWith('/many/') && small ? small : i >= 0 ? bodies[i % bodies.length] : undefined;
  if (!body) { res.writeHead(404); res.end(); return; }
  res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length });
  res.end(body);
};

// A bench that dies without stopping us closes our stdin: exit too, rather than linger and
// hold the bench's output pipe open.
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();

process.on('SIGTERM', () => {
  if (logFile) fs.writeFileSync(logFile, arrivals.join('\n'));
  process.exit(0);
});

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
