import http from 'node:http';
import net from 'node:net';

/**
 * A forward proxy on 127.0.0.1 that opens CONNECT tunnels, as Squid or a corporate egress proxy
 * does: 407 without the right `Proxy-Authorization` when given a password, 403 for a refused
 * port, 502 when the target cannot be reached. Records each CONNECT it was asked for.
 */
export async function connectProxy(opts: { auth?: string; refusePorts?: number[] } = {}) {
  const asked: { target: string; authorization?: string; userAgent?: string }[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((_req, res) => { res.writeHead(405); res.end(); });
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    const target = req.url ?? '';
    asked.push({ target, authorization: req.headers['proxy-authorization'], userAgent: req.headers['user-agent'] });
    const expected = opts.auth ? `Basic ${Buffer.from(opts.auth).toString('base64')}` : undefined;
    if (expected && req.headers['proxy-authorization'] !== expected) {
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const colon = target.lastIndexOf(':');
    const host = target.slice(0, colon).replace(/^\[|\]$/g, '');
    const port = Number(target.slice(colon + 1));
    if (opts.refusePorts?.includes(port)) {
      client.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const upstream = net.connect(port, host);
    sockets.add(upstream);
    upstream.on('close', () => { sockets.delete(upstream); client.destroy(); });
    client.on('close', () => upstream.destroy());
    upstream.once('error', () => {
      if (!client.writableEnded) client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
    });
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    asked,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}
