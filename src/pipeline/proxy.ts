import net from 'node:net';
import type { Connector } from './warmConnections';

/**
 * Requests through an HTTP forward proxy (`CRAWL_PROXY`), as a network that lets nothing out
 * except through its proxy needs, or an operator who wants the crawl to leave from one known
 * address. Every connection to a site is a CONNECT tunnel through the proxy, for http as for
 * https: TLS runs end to end inside it (the proxy sees neither the path nor the image), each
 * tunnel is one keep-alive connection to the site, so the per-site connection limits,
 * connections opened ahead of a slot and idle-close handling work as they do without a proxy.
 *
 * The network guard still decides: the site's name is resolved here and checked, and the tunnel
 * is asked for that IP address, never the name. Asking by name would let the proxy resolve it
 * again, and a name that answers us with a public address and the proxy with an internal one
 * (DNS rebinding) would reach whatever the proxy can reach. The cost: the proxy sees addresses,
 * so its rules must allow by address and port, not by domain.
 */

export interface ProxySetting {
  host: string;
  port: number;
  /** `Basic ...` when the URL carries a user and password. */
  authorization?: string;
  /** The URL without its credentials, for messages and logs. */
  shown: string;
}

/** The longest proxy answer to a CONNECT we read: a status line and a few headers. */
const MAX_ANSWER_BYTES = 16 * 1024;

export function parseProxy(raw: string, name = 'CRAWL_PROXY'): ProxySetting {
  let u: URL;
  try {
    u = new URL(raw.includes('://') ? raw : `http://${raw}`);
  } catch {
    const secret = raw.includes('@') ? ' (a user or password with / # ? or % in it must have them percent-encoded: %2F %23 %3F %25)' : '';
    throw new Error(`${name} must be a proxy URL such as http://proxy.example:3128, got ${JSON.stringify(redacted(raw))}${secret}`);
  }
  if (u.protocol !== 'http:') {
    throw new Error(`${name}: only an http:// proxy is supported (the tunnel to each https site is TLS end to end all the same), got ${u.protocol}//`);
  }
  if (!u.hostname) throw new Error(`${name} names no host: ${JSON.stringify(redacted(raw))}`);
  if ((u.pathname && u.pathname !== '/') || u.search || u.hash) {
    throw new Error(`${name} must be the proxy's address alone (http://host:port), got a path in ${JSON.stringify(redacted(raw))}`);
  }
  const port = u.port ? Number(u.port) : 80;
  const shown = `http://${u.host}`;
  const user = decodeURIComponent(u.username);
  const password = decodeURIComponent(u.password);
  return {
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port,
    shown,
    ...(user || password ? { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` } : {}),
  };
}

/**
 * The proxy URL with its user and password replaced, for an error message: everything before its
 * last `@`, whatever the password holds (a `/` in it is what makes such a URL unreadable).
 */
function redacted(raw: string): string {
  const at = raw.lastIndexOf('@');
  if (at < 0) return raw;
  const scheme = raw.indexOf('://');
  const from = scheme >= 0 && scheme < at ? scheme + 3 : 0;
  return `${raw.slice(0, from)}***${raw.slice(at)}`;
}

/** An error of the proxy's, told from the site's by its code (the fetcher's classifyError, workerOutage's noRouteError). */
export class ProxyError extends Error {
  constructor(message: string, readonly code: 'EPROXYDOWN' | 'EPROXYAUTH' | 'EPROXYREFUSED' | 'EPROXYBADGATEWAY') {
    super(message);
    this.name = 'ProxyError';
  }
}

type Lookup = (hostname: string, callback: (err: Error | null, address?: string) => void) => void;

/**
 * A connector for undici that opens each connection as a tunnel through the proxy, to the
 * address `lookup` (the network guard's) gives for the site's name. `tls` is undici's own
 * connector, which makes the TLS connection over the tunnel (verification, session reuse).
 */
export function proxyConnector(proxy: ProxySetting, opts: { lookup: Lookup; tls: Connector; timeoutMs: number; userAgent: string }): Connector {
  return (target, callback) => {
    const finish = (err: Error | null, socket?: net.Socket) => (err ? callback(err, null) : callback(null, socket!));
    const https = target.protocol === 'https:';
    const port = Number(target.port) || (https ? 443 : 80);
    const hostname = target.hostname.replace(/^\[|\]$/g, '');
    const resolved = (address: string) => {
      const authority = `${net.isIPv6(address) ? `[${address}]` : address}:${port}`;
      tunnel(proxy, authority, opts, (err, socket) => {
        if (err || !socket) return finish(err ?? new Error('no tunnel'));
        if (!https) return finish(null, socket);
        opts.tls({ ...target, httpSocket: socket }, (tlsErr, tlsSocket) => {
          if (tlsErr) {
            socket.destroy();
            return finish(tlsErr);
          }
          finish(null, tlsSocket as net.Socket);
        });
      });
    };
    if (net.isIP(hostname)) resolved(hostname); // the fetcher has checked a literal address itself
    else opts.lookup(hostname, (err, address) => (err || !address ? finish(err ?? new Error(`no address for ${hostname}`)) : resolved(address)));
  };
}

function tunnel(proxy: ProxySetting, authority: string, opts: { timeoutMs: number; userAgent: string }, callback: (err: Error | null, socket?: net.Socket) => void): void {
  const socket = net.connect({ host: proxy.host, port: proxy.port });
  let answer = Buffer.alloc(0);
  let settled = false;
  const settle = (err: Error | null) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    socket.removeListener('data', onData);
    socket.removeListener('error', onError);
    socket.removeListener('close', onClose);
    if (err) {
      socket.destroy();
      callback(err);
    } else {
      // Held until undici (or TLS) reads it: nothing the site sends may be lost meanwhile.
      socket.pause();
      callback(null, socket);
    }
  };
  const timer = setTimeout(() => settle(new ProxyError(`the proxy ${proxy.shown} (CRAWL_PROXY) did not open a tunnel to ${authority} within ${opts.timeoutMs} ms`,
    socket.connecting ? 'EPROXYDOWN' : 'EPROXYBADGATEWAY')), opts.timeoutMs);
  const onError = (err: NodeJS.ErrnoException) => {
    settle(socket.connecting || !socket.bytesWritten
      ? new ProxyError(`cannot reach the proxy ${proxy.shown} (CRAWL_PROXY): ${err.message}`, 'EPROXYDOWN')
      : new ProxyError(`the proxy ${proxy.shown} dropped the tunnel to ${authority}: ${err.message}`, 'EPROXYBADGATEWAY'));
  };
  const onClose = () => settle(new ProxyError(`the proxy ${proxy.shown} closed the connection before opening a tunnel to ${authority}`, 'EPROXYBADGATEWAY'));
  const onData = (chunk: Buffer) => {
    answer = Buffer.concat([answer, chunk]);
    const end = answer.indexOf('\r\n\r\n');
    if (end < 0) {
      if (answer.length > MAX_ANSWER_BYTES) settle(new ProxyError(`the proxy ${proxy.shown} answered the CONNECT to ${authority} with more than ${MAX_ANSWER_BYTES} bytes of headers`, 'EPROXYBADGATEWAY'));
      return;
    }
    const statusLine = answer.subarray(0, answer.indexOf('\r\n')).toString('latin1');
    const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(statusLine);
    const status = m ? Number(m[1]) : 0;
    const said = `${status}${m?.[2] ? ` ${m[2].slice(0, 80)}` : ''}`;
    if (status >= 200 && status < 300) {
      // Whatever came after the proxy's answer is the site's.
      const rest = answer.subarray(end + 4);
      settle(null);
      if (rest.length) socket.unshift(rest);
      return;
    }
    if (!m) settle(new ProxyError(`the proxy ${proxy.shown} answered the CONNECT to ${authority} with no HTTP status line (${JSON.stringify(statusLine.slice(0, 60))})`, 'EPROXYBADGATEWAY'));
    else if (status === 407) {
      settle(new ProxyError(`the proxy ${proxy.shown} asks for a user and password (${said}): ${proxy.authorization ? 'the ones in CRAWL_PROXY were not accepted' : 'give them in CRAWL_PROXY as http://user:password@host:port'}`, 'EPROXYAUTH'));
    } else if (status >= 500) settle(new ProxyError(`the proxy ${proxy.shown} could not reach ${authority} (${said})`, 'EPROXYBADGATEWAY'));
    else settle(new ProxyError(`the proxy ${proxy.shown} refused a tunnel to ${authority} (${said})`, 'EPROXYREFUSED'));
  };
  socket.on('data', onData);
  socket.on('error', onError);
  socket.on('close', onClose);
  socket.once('connect', () => {
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 60_000);
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\nUser-Agent: ${opts.userAgent}\r\n${proxy.authorization ? `Proxy-Authorization: ${proxy.authorization}\r\n` : ''}\r\n`);
  });
}

/**
 * Whether the proxy takes connections: undefined if it does, else why not. A worker asks once at
 * start, so that a wrong host or port in CRAWL_PROXY is said at once, not by each site's failures.
 */
export function probeProxy(proxy: ProxySetting, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: proxy.host, port: proxy.port });
    const done = (why: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(why);
    };
    const timer = setTimeout(() => done(`no answer within ${timeoutMs} ms`), timeoutMs);
    socket.once('connect', () => done(undefined));
    socket.once('error', (err) => done(err.message));
  });
}
