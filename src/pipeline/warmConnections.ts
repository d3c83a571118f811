import type { Socket } from 'node:net';
import type { buildConnector } from 'undici';
import { idleAfter, noteConnectionOpened } from './connectionReuse';

export type Connector = buildConnector.connector;
type ConnectOptions = buildConnector.Options;
type Callback = buildConnector.Callback;

/** Until an opened connection is taken, it waits this long, then closes. */
const WARM_IDLE_MS = 5_000;
/** Lead before a slot when the origin's connect time is unknown (first contact). */
const FIRST_CONTACT_LEAD_MS = 1_000;
const MAX_LEAD_MS = 2_000;
const MAX_TRACKED_ORIGINS = 10_000;

/**
 * Per-origin time estimates (connect, response): a slower sample is taken at once, a faster one
 * only slowly, so a lead or a wait errs long. The map is bounded: past its size it starts over.
 */
export function noteSlowFirst(estimates: Map<string, number>, origin: string, ms: number): void {
  if (estimates.size >= MAX_TRACKED_ORIGINS && !estimates.has(origin)) estimates.clear();
  const before = estimates.get(origin) ?? ms;
  estimates.set(origin, Math.max(ms, 0.8 * before + 0.2 * ms));
}

interface Warm {
  socket?: Socket;
  /** The attempt failed: the request that comes for it gets this error, not a second attempt. */
  error?: Error;
  /** undici's connect, waiting for this connection to finish opening. */
  waiter?: Callback;
  timer?: NodeJS.Timeout;
  release(): void;
}

/** The key undici's Agent uses for an origin's pool: `${protocol}//${host}` (URL.origin). */
function originKey(opts: ConnectOptions): string {
  return `${opts.protocol}//${opts.host ?? (opts.port ? `${opts.hostname}:${opts.port}` : opts.hostname)}`;
}

/**
 * Connections opened ahead of paced requests. A paced request must be on the wire within the
 * lateness bound (10 ms) of its slot, or it is not sent; one that needs a new connection to a
 * real host (a round trip or more for TCP, more for TLS) could never make it, and a host that
 * closes every connection would never be crawled. So before each slot the pipeline asks for a
 * connection when the origin's pool has none free, and this hands it to the pool when undici
 * next connects to that origin. undici has no preconnect of its own (nodejs/undici#317); this
 * wraps its connector, so a warm connection is made exactly as undici would make it (network
 * guard, TLS verification, timeouts).
 */
export class WarmConnections {
  private readonly warm = new Map<string, Warm>();
  private readonly connectMs = new Map<string, number>();
  /** Origin -> its connections open now (handed to undici or not), to close idle ones (closeIdle). */
  private readonly sockets = new Map<string, Set<Socket>>();
  /** Connections opened by this class, whether undici or preconnect asked (for tests and logs). */
  opened = 0;

  constructor(private readonly base: Connector, private readonly idleMs = WARM_IDLE_MS) {}

  /** The connector to give undici: a connection opened ahead for the origin if any, else a new one. */
  readonly connect: Connector = (opts, callback) => {
    const key = originKey(opts);
    const w = this.warm.get(key);
    if (!w) {
      this.open(key, opts, callback);
      return;
    }
    this.warm.delete(key);
    w.release();
    if (w.error) {
      const err = w.error;
      process.nextTick(() => callback(err, null));
    } else if (!w.socket) {
      w.waiter = callback; // still opening: undici gets it the moment it is ready
    } else if (w.socket.destroyed || w.socket.readableEnded) {
      this.open(key, opts, callback); // the site closed it meanwhile
    } else {
      // Asynchronously, as a real connect would: undici's connect loop is not re-entrant.
      const socket = w.socket;
      process.nextTick(() => callback(null, socket));
    }
  };

  /**
   * How long before a slot to ask for a connection to this origin: twice its connect time
   * (noteSlowFirst), plus 50 ms for a busy event loop. Too early costs little: at most one idle connection for a few seconds.
   */
  leadMs(key: string): number {
    const ms = this.connectMs.get(key);
    return ms === undefined ? FIRST_CONTACT_LEAD_MS : Math.min(MAX_LEAD_MS, 2 * ms + 50);
  }

  /** Opens a connection to the origin unless one is already open or opening here. */
  preconnect(opts: ConnectOptions): void {
    const key = originKey(opts);
    if (this.warm.has(key)) return;
    const w: Warm = { release: () => undefined };
    this.warm.set(key, w);
    this.open(key, opts, (err, socket) => {
      if (w.waiter) {
        const cb = w.waiter;
        w.waiter = undefined;
        if (err) cb(err, null);
        else cb(null, socket!);
        return;
      }
      if (this.warm.get(key) !== w) { // closed, or taken and given up: nobody wants it
        socket?.destroy();
        return;
      }
      if (err || !socket) {
        // A host that is down gets one connection attempt per slot, not two: the request that
        // comes for this one fails with its error. Forgotten after a while like a socket.
        w.error = err ?? new Error('connect failed');
        w.timer = setTimeout(() => { if (this.warm.get(key) === w) this.warm.delete(key); }, this.idleMs);
        w.timer.unref();
        w.release = () => clearTimeout(w.timer);
        return;
      }
      w.socket = socket;
      const drop = () => {
        if (this.warm.get(key) === w) this.warm.delete(key);
        w.release();
        socket.destroy();
      };
      // Closed by the site, or unused for too long: nothing is lost, a request connects anew.
      socket.once('end', drop).once('close', drop).on('error', drop);
      w.timer = setTimeout(drop, this.idleMs);
      w.timer.unref();
      w.release = () => {
        clearTimeout(w.timer);
        socket.off('end', drop).off('close', drop).off('error', drop);
      };
    });
  }

  /**
   * Closes the origin's connections that have carried a request, are free, and will have waited
   * unused `limitMs` or more `inMs` from now; returns how many. undici takes such a close as the
   * site's own.
   */
  closeIdle(key: string, inMs: number, limitMs: number): number {
    let closed = 0;
    for (const socket of this.sockets.get(key) ?? []) {
      const idle = idleAfter(socket, inMs);
      if (idle === undefined || idle < limitMs) continue;
      socket.destroy();
      closed += 1;
    }
    return closed;
  }

  /** Closes every connection not yet handed over. */
  close(): void {
    for (const w of this.warm.values()) {
      w.release();
      w.socket?.destroy();
    }
    this.warm.clear();
  }

  /** Until it closes: an origin's entry goes with its last connection, so the map holds open ones only. */
  private track(key: string, socket: Socket): void {
    let set = this.sockets.get(key);
    if (!set) this.sockets.set(key, (set = new Set()));
    set.add(socket);
    socket.once('close', () => {
      set!.delete(socket);
      if (set!.size === 0 && this.sockets.get(key) === set) this.sockets.delete(key);
    });
  }

  private open(key: string, opts: ConnectOptions, callback: Callback): void {
    const started = performance.now();
    this.opened += 1;
    this.base(opts, (err, socket) => {
      if (err) {
        callback(err, null);
        return;
      }
      noteSlowFirst(this.connectMs, key, performance.now() - started);
      noteConnectionOpened(socket!);
      this.track(key, socket!);
      callback(null, socket!);
    });
  }
}
