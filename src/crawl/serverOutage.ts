/**
 * `crawl run`'s word on its Temporal server going away and coming back. Against an operator's
 * server (TEMPORAL_ADDRESS), a restart of it ended the run with `crawl: Failed to describe
 * workflow: 14 UNAVAILABLE ...` and exit code 1, while its workers went on and finished the
 * crawl: no summary, no metadata.ndjson. Now the run waits for the server, saying so once.
 */

/** Whether a client call failed because the server could not be reached: gRPC UNAVAILABLE, as such or as the cause of the SDK's error. */
export function isServerUnreachable(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; e !== null && typeof e === 'object' && depth < 5; depth += 1) {
    if ((e as { code?: unknown }).code === 14) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return /\b14 UNAVAILABLE\b/.test(err instanceof Error ? err.message : String(err));
}

/** The connection error in a few words (`connect ECONNREFUSED 127.0.0.1:7233`), else gRPC's. */
function reasonOf(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const socket = /\b(?:connect|getaddrinfo|read|write) E[A-Z]+(?: [\w.:[\]-]+)?/.exec(message)?.[0].replace(/\.$/, '');
  return socket ?? /\b14 UNAVAILABLE[^.;]*/.exec(message)?.[0] ?? 'UNAVAILABLE';
}

export class ServerOutageNotice {
  private sinceMs?: number;

  constructor(private readonly address: string) {}

  /** A poll could not reach the server: the line to show, the first time. */
  down(nowMs: number, err: unknown): string | undefined {
    if (this.sinceMs !== undefined) return undefined;
    this.sinceMs = nowMs;
    return `cannot reach the Temporal server at ${this.address} (${reasonOf(err)}): waiting for it; workers that reach it go on, and progress shows again when it answers`;
  }

  /** A poll reached it: the line to show when it had been gone. */
  up(nowMs: number): string | undefined {
    if (this.sinceMs === undefined) return undefined;
    const goneS = Math.round((nowMs - this.sinceMs) / 1000);
    this.sinceMs = undefined;
    return `the Temporal server at ${this.address} answers again (after ${goneS} s)`;
  }
}

/**
 * A note as a client prints it: over the progress bar on a terminal, else as a JSON event
 * (`temporal_unreachable` / `temporal_reachable`) among the client's other JSON lines.
 */
export function outageLine(kind: 'down' | 'up', note: string, tty: boolean): string {
  if (tty) return `\r\x1b[Kcrawl: ${note}\n`;
  return `${JSON.stringify({ event: kind === 'down' ? 'temporal_unreachable' : 'temporal_reachable', time: new Date().toISOString(), note })}\n`;
}
