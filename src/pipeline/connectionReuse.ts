import diagnosticsChannel from 'node:diagnostics_channel';

/**
 * Whether a request went out on a connection the site may have closed already.
 *
 * A site closes an idle keep-alive connection when its own timeout says so, often without
 * announcing it (no `Keep-Alive: timeout=` header). A request sent while that close is on its
 * way is reset unanswered: the site never read it. A paced crawl hits this race on every
 * request when its spacing is about the site's timeout (1 request/s against a 1 s timeout, a
 * Crawl-delay of 10 against 10 s): measured on loopback with a 60 ms window, a third of the
 * requests failed, and the errors halted the source. Browsers and Go's client send such a
 * request again at once on a new connection (undici leaves it to the caller, nodejs/undici#3492).
 *
 * A connection counts as possibly stale once it has waited unused as long as a site's idle
 * timeout can be: IDLE_CLOSE_MIN_MS since its last answer, or STALE_AFTER_MS since it was
 * opened ahead. One opened for this very request and used at once was not closed for being
 * idle, so a site that resets every connection gets one attempt per request, not two. Nor was
 * one that answered a moment ago: a site that drops a request it has read (nginx's 444, a
 * limiter that closes instead of answering) closes that connection just so, and sending the
 * request again at once made two requests in one slot at the site.
 */
export const STALE_AFTER_MS = 1_000;
/** The shortest wait after which a site's close is taken for its idle timeout (servers' are seconds: Apache and Node 5 s, nginx 75 s). */
export const IDLE_CLOSE_MIN_MS = 500;

interface Use {
  openedAt: number;
  requests: number;
  /** When its last response ended (or it opened), performance.now() ms. */
  idleSince: number;
  /** A request is out on it. */
  busy: boolean;
}

export interface SendWatcher {
  /**
   * Called as the request is written: `stale` if its connection may have been closed by the
   * site; `idleMs`, how long the connection had waited unused; `socket`, to say when it is free.
   */
  sentOn(stale: boolean, idleMs: number, socket: object): void;
}

const connections = new WeakMap<object, Use>();
let next: SendWatcher | undefined;

/** A connection was opened (every one goes through the fetcher's connector). */
export function noteConnectionOpened(socket: object, now = performance.now()): void {
  connections.set(socket, { openedAt: now, requests: 0, idleSince: now, busy: false });
}

/** The response on the connection has ended: it waits for the next request from now on. */
export function noteConnectionFree(socket: object, now = performance.now()): void {
  const use = connections.get(socket);
  if (!use) return;
  use.busy = false;
  use.idleSince = now;
}

/**
 * How long a connection that has carried a request will have waited unused `inMs` from now;
 * undefined while a request is out on it, or before its first (one opened ahead for a slot).
 */
export function idleAfter(socket: object, inMs: number, now = performance.now()): number | undefined {
  const use = connections.get(socket);
  return use && !use.busy && use.requests > 0 ? now - use.idleSince + inMs : undefined;
}

/**
 * The request whose handler calls this is written next, synchronously: undici calls the
 * handler's onRequestStart and then publishes `undici:client:sendHeaders` with its socket, in
 * one go. Should that change, the watcher is simply never told, and nothing is sent twice.
 */
export function watchNextSend(watcher: SendWatcher): void {
  next = watcher;
}

diagnosticsChannel.subscribe('undici:client:sendHeaders', (message) => {
  const watcher = next;
  next = undefined;
  const socket = (message as { socket?: object }).socket;
  if (!socket) return;
  const use = connections.get(socket);
  if (!use) return; // not one of ours (Node's own fetch publishes here too)
  const now = performance.now();
  const idleMs = now - use.idleSince;
  watcher?.sentOn(idleMs >= (use.requests > 0 ? IDLE_CLOSE_MIN_MS : STALE_AFTER_MS), idleMs, socket);
  use.requests += 1;
  use.busy = true;
});

/** The connection closed (or was reset) before any of the response arrived. */
export function closedUnanswered(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  if (e?.code === 'UND_ERR_SOCKET') return e.message === 'other side closed' || e.message === 'closed';
  return e?.code === 'ECONNRESET' || e?.code === 'EPIPE';
}
