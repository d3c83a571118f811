import net from 'node:net';
import tls from 'node:tls';

/**
 * A TLS front for a plaintext Temporal dev server (`temporal server start-dev` has no TLS):
 * terminates TLS (ALPN h2, as gRPC asks), optionally requires a client certificate signed by
 * `ca`, and passes the HTTP/2 bytes on unchanged. Counts the connections it let through and the
 * handshakes it refused.
 */
export async function tlsProxy(target: string, opts: { cert: Buffer; key: Buffer; ca?: Buffer }) {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const seen = { authorized: 0, refused: [] as string[] };
  const sockets = new Set<net.Socket>();
  const server = tls.createServer({
    cert: opts.cert, key: opts.key, ALPNProtocols: ['h2'],
    ...(opts.ca ? { ca: opts.ca, requestCert: true, rejectUnauthorized: true } : {}),
  }, (socket) => {
    seen.authorized++;
    const upstream = net.connect(port, host);
    for (const s of [socket, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => { socket.destroy(); upstream.destroy(); });
    }
    socket.pipe(upstream).pipe(socket);
  });
  server.on('tlsClientError', (err) => seen.refused.push(err.message));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}
