/**
 * Whether this process can reach its Temporal server, told from the SDK's own log lines. While
 * the server was down, a worker logged each of its calls' retries: 1,262 JSON lines in a
 * ten-minute outage, half of them at ERROR ("gRPC call poll_workflow_task_queue retried 11
 * times"), and nothing when it answered again. Now it logs one line when the server cannot be
 * reached, a reminder every few minutes, and one when it answers again, with how long it was gone.
 */

export interface ReachabilityNote {
  level: 'warn' | 'info';
  fields: Record<string, unknown>;
  msg: string;
}

/** One of the SDK client's retry lines for a call that could not reach the server. */
export function isUnreachableRetry(meta: Record<string, unknown> | undefined): boolean {
  return meta?.target === 'temporalio_client::retry' && /\bcode: Unavailable\b/.test(String(meta.error ?? ''));
}

/** The SDK's error text (a Rust Status, hundreds of characters) as its code, message and cause. */
export function shortStatus(error: string): string {
  const code = /\bcode: (\w+)/.exec(error)?.[1];
  const message = /\bmessage: "([^"]*)"/.exec(error)?.[1];
  const kind = /\bkind: (\w+)/.exec(error)?.[1];
  if (!code || message === undefined) return error.slice(0, 200);
  return `${code}: ${message}${kind ? ` (${kind})` : ''}`;
}

export class ServerReachability {
  private downSinceMs?: number;
  private remindedAtMs = 0;
  private leftOut = 0;
  private lastError = '';

  constructor(private readonly remindEveryMs = 5 * 60_000) {}

  get down(): boolean {
    return this.downSinceMs !== undefined;
  }

  /** Since when the server has not answered, and why (for a health check); undefined while it answers. */
  outage(): { sinceMs: number; error: string } | undefined {
    return this.downSinceMs === undefined ? undefined : { sinceMs: this.downSinceMs, error: this.lastError };
  }

  /** A retry line for a call that could not reach the server: the line to log instead of it, if any. */
  unreachable(nowMs: number, error: string): ReachabilityNote | undefined {
    this.leftOut += 1;
    this.lastError = shortStatus(error);
    if (this.downSinceMs === undefined) {
      this.downSinceMs = nowMs;
      this.remindedAtMs = nowMs;
      return {
        level: 'warn',
        fields: { event: 'temporal.unreachable', error: shortStatus(error) },
        msg: 'cannot reach the Temporal server: the worker keeps trying and says when it answers again (the SDK\'s retry lines are left out meanwhile)',
      };
    }
    if (nowMs - this.remindedAtMs < this.remindEveryMs) return undefined;
    this.remindedAtMs = nowMs;
    return {
      level: 'warn',
      fields: { event: 'temporal.unreachable', error: shortStatus(error), downForS: Math.round((nowMs - this.downSinceMs) / 1000), retriesLeftOut: this.leftOut },
      msg: 'still cannot reach the Temporal server',
    };
  }

  /** A call reached the server: the line saying it is back, when it was gone. */
  reachable(nowMs: number): ReachabilityNote | undefined {
    if (this.downSinceMs === undefined) return undefined;
    const note: ReachabilityNote = {
      level: 'info',
      fields: { event: 'temporal.reachable', downForS: Math.round((nowMs - this.downSinceMs) / 1000), retriesLeftOut: this.leftOut },
      msg: 'the Temporal server answers again',
    };
    this.downSinceMs = undefined;
    this.leftOut = 0;
    return note;
  }
}
