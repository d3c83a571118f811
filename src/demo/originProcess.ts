/**
 * A site in its own process for benchmarks and tests (a real site is never inside the crawler's
 * process, and an origin that shares the crawler's event loop logs arrivals late when the crawler
 * is busy): serves DIR/<n>.jpg as /img/<n>.jpg (and /<anything>/<n>.jpg) on HOST:PORT, robots.txt
 * allows all; paths under /many/ get DIR/small.jpg, paths under /missing/ a 404. Prints "listening <port>" when ready. With a log file
 * argument, it writes "<arrival ms> <host> <path>" per request there when it gets SIGTERM.
 *
 * It speaks just enough HTTP/1.1 for GET with keep-alive over `net`, every response built once
 * in advance and written in one call. The site shares this machine's two cores with the crawler
 * it stands in for, so its CPU comes out of the crawler's rate: node:http cost 0.26-0.37 ms per
 * request here (bench/RESULTS.md, session 9), a real site's CPU is on another machine.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const [dir, hostsArg = '127.0.0.1', portArg = '0', logFile] = process.argv.slice(2);
const files = fs.readdirSync(dir!).filter((f) => /^\d+\.jpg$/.test(f)).sort((a, b) => parseInt(a) - parseInt(b));
const smallPath = path.join(dir!, 'small.jpg');
const arrivals: string[] = [];
const hosts = hostsArg.split(',');
let port = Number(portArg);

function response(status: string, contentType: string | undefined, body: Buffer): Buffer {
  const head = `HTTP/1.1 ${status}\r\n${contentType ? `content-type: ${contentType}\r\n` : ''}content-length: ${body.length}\r\nkeep-alive: timeout=60\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

const images = files.map((f) => response('200 OK', 'image/jpeg', fs.readFileSync(path.join(dir!, f))));
const small = fs.existsSync(smallPath) ? response('200 OK', 'image/jpeg', fs.readFileSync(smallPath)) : undefined;
const robots = response('200 OK', 'text/plain', Buffer.from('User-agent: *\nAllow: /\n'));
const notFound = response('404 Not Found', undefined, Buffer.alloc(0));
const badRequest = Buffer.from('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n', 'latin1');
const MAX_HEAD = 16 * 1024;

function answer(target: string): Buffer {
  if (target === '/robots.txt') return robots;
  if (target.startsWith('/many/') && small) return small;
  if (target.startsWith('/missing/')) return notFound;
  const m = /\/(\d+)\.jpg$/.exec(target);
  return m && images.length > 0 ? images[Number(m[1]) % images.length]! : notFound;
}

function serve(socket: net.Socket): void {
  let pending = '';
  socket.setNoDelay(true);
  socket.on('error', () => socket.destroy());
  socket.on('data', (data: Buffer) => {
    pending += data.toString('latin1');
    for (let end = pending.indexOf('\r\n\r\n'); end >= 0; end = pending.indexOf('\r\n\r\n')) {
      const head = pending.slice(0, end);
      pending = pending.slice(end + 4);
      const [line = '', ...fields] = head.split('\r\n');
      const [method, target] = line.split(' ');
      // Requests without a body only (the crawler sends GET): anything else is refused.
      if (method !== 'GET' || !target || fields.some((f) => /^(content-length|transfer-encoding)\s*:/i.test(f) && !/:\s*0\s*$/.test(f))) {
        socket.end(badRequest);
        return;
      }
      const field = (name: string) => fields.find((f) => f.toLowerCase().startsWith(`${name}:`))?.slice(name.length + 1).trim();
      if (logFile) arrivals.push(`${Date.now()} ${field('host') ?? ''} ${target}`);
      socket.write(answer(target));
      if (field('connection')?.toLowerCase() === 'close') {
        socket.end();
        return;
      }
    }
    if (pending.length > MAX_HEAD) socket.end(badRequest);
  });
}

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
    const server = net.createServer(serve);
    await new Promise<void>((resolve) => server.listen(port, host, resolve));
    port = (server.address() as net.AddressInfo).port;
  }
  process.stdout.write(`listening ${port}\n`);
})();
