import net from 'node:net';
import { DEFAULT_USER_AGENT } from './config';
import { log } from '../shared/log';

/**
 * Domains reserved for examples and for no network (RFC 2606, RFC 6761, and mDNS's `.local`):
 * a contact there reaches no one.
 */
const RESERVED = /(^|\.)(example\.(com|net|org)|example|test|invalid|localhost|local)$/i;

/** The hosts of a User-Agent's contact URLs and e-mail addresses. */
function contactHosts(userAgent: string): string[] {
  const urls = [...userAgent.matchAll(/https?:\/\/([^/\s;:)]+)/gi)].map((m) => m[1]!);
  const mails = [...userAgent.matchAll(/[^\s;:()<>@+]+@([a-z0-9.-]+[a-z0-9])/gi)].map((m) => m[1]!);
  return [...urls, ...mails];
}

/**
 * Whether a User-Agent gives site owners no way to reach the operator: the built-in one (its
 * address is example.org, and the project page is not the operator's), or one whose every contact
 * is on a reserved example domain, as the compose file's default is.
 */
export function placeholderUserAgent(userAgent: string): boolean {
  if (userAgent.trim() === DEFAULT_USER_AGENT) return true;
  const hosts = contactHosts(userAgent);
  return hosts.length > 0 && hosts.every((h) => RESERVED.test(h.replace(/\.$/, '')));
}

/** Whether a request to `host` (as in the URL, brackets removed) leaves this machine. */
export function leavesMachine(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return false;
  if (net.isIPv4(h)) return !h.startsWith('127.');
  if (net.isIPv6(h)) return h !== '::1' && !/^::ffff:127\./.test(h);
  return true;
}

/**
 * A worker sending a placeholder User-Agent to real sites says so, once: site owners read the
 * contact in their logs to ask a crawler to slow down or stay away, and an operator who never
 * set CRAWL_USER_AGENT is the one they cannot reach. The demo and tests, on loopback, are left
 * in peace.
 */
export class UserAgentNotice {
  private pending: boolean;

  constructor(
    private readonly userAgent: string,
    private readonly warn: (fields: object, msg: string) => void = (f, m) => log.warn(f, m),
    private readonly offMachine: (host: string) => boolean = leavesMachine,
  ) {
    this.pending = placeholderUserAgent(userAgent);
  }

  /** A request is about to go to `host`. */
  sending(host: string): void {
    if (!this.pending || !this.offMachine(host)) return;
    this.pending = false;
    this.warn({ event: 'user-agent-placeholder', userAgent: this.userAgent, host },
      `sending ${host} a User-Agent whose contact reaches no one (CRAWL_USER_AGENT is unset, or names only example domains): ` +
      'a site owner who wants this crawler slower or gone cannot ask you; set CRAWL_USER_AGENT to your crawler\'s name, ' +
      'version and a contact of yours, such as "YourCrawler/1.0 (+https://<your site>/crawler; <your e-mail address>)"');
  }
}
