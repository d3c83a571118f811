import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real HTTP origin on 127.0.0.1 for tests and benchmarks. Routes are plain handlers; every
 * request is logged with its arrival time so tests can check what the site actually saw.
 */

export type Route = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export interface OriginRequest {
  path: string;
  atMs: number;
  userAgent: string | undefined;
  host: string | undefined;
  acceptEncoding: string | undefined;
  /** The From header (CRAWL_FROM), when one was sent. */
  from?: string | undefined;
}

export class Origin {
  readonly requests: OriginRequest[] = [];
  private readonly routes = new Map<string, Route>();
  private server?: http.Server;
  port = 0;
  host = '127.0.0.1';
  /** TCP connections accepted, to tell keep-alive reuse from reconnecting. */
  connections = 0;

  route(path: string, handler: Route): this {
    this.routes.set(path, handler);
    return this;
  }

  serve(path: string, body: Buffer | string, contentType = 'image/jpeg', status = 200): this {
    return this.route(path, (_req, res) => {
      res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  }

  url(path: string, host = this.host): string {
    return `http://${host}:${this.port}${path}`;
  }

  async start(host = '127.0.0.1', port = 0): Promise<this> {
    if (!host.startsWith('127.')) throw new Error('the demo origin only listens on loopback (127.0.0.0/8)');
    this.server = http.createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      this.requests.push({ path, atMs: Date.now(), userAgent: req.headers['user-agent'], host: req.headers.host, acceptEncoding: req.headers['accept-encoding'], from: req.headers.from });
      const handler = this.routes.get(path) ?? this.routes.get('*');
      if (handler) return handler(req, res);
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    });
    this.server.on('connection', () => { this.connections += 1; });
    this.server.keepAliveTimeout = 60_000;
    this.host = host;
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, resolve);
    });
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  /** TCP connections open right now. */
  openConnections(): Promise<number> {
    return new Promise((resolve, reject) => {
      if (!this.server) return resolve(0);
      this.server.getConnections((err, n) => (err ? reject(err) : resolve(n)));
    });
  }

  /** Requests to paths starting with prefix. */
  hits(prefix: string): OriginRequest[] {
    return this.requests.filter((r) => r.path.startsWith(prefix));
  }
}

/** Sends one byte a second, forever (until the client gives up). */
export const drip: Route = (_req, res) => {
  res.writeHead(200, { 'content-type': 'image/jpeg' }); // chunked: no length to refuse it by
  res.write(Buffer.from([0xff, 0xd8, 0xff]));
  const t = setInterval(() => { if (!res.destroyed) res.write(Buffer.from([0])); else clearInterval(t); }, 1_000);
  res.on('close', () => clearInterval(t));
};

export function redirect(to: string, status = 302): Route {
  return (_req, res) => {
    res.writeHead(status, { location: to });
    res.end();
  };
}
