import type http from 'node:http';

/**
 * A route whose responses share one uplink of `bytesPerS`, split evenly among those open (as a
 * flow-fair queue does), headers at once: a site whose link is its bottleneck.
 */
export class ThinUplink {
  private readonly responses = new Set<{ res: http.ServerResponse; sent: number }>();
  private readonly timer: ReturnType<typeof setInterval>;
  /** The most responses open at once since it was last set to 0. */
  mostOpen = 0;

  /** `chunked`: no Content-Length, so a response is known to be large only as it streams. */
  constructor(private readonly body: Buffer, bytesPerS: number, private readonly opts: { chunked?: boolean } = {}) {
    this.timer = setInterval(() => {
      if (!this.responses.size) return;
      const share = Math.max(1, Math.floor((bytesPerS * 0.01) / this.responses.size));
      for (const r of [...this.responses]) {
        const n = Math.min(share, body.length - r.sent);
        r.res.write(body.subarray(r.sent, r.sent + n));
        r.sent += n;
        if (r.sent >= body.length) {
          r.res.end();
          this.responses.delete(r);
        }
      }
    }, 10);
    this.timer.unref();
  }

  get open(): number {
    return this.responses.size;
  }

  readonly route = (_req: http.IncomingMessage, res: http.ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'image/jpeg', ...(this.opts.chunked ? {} : { 'content-length': this.body.length }) });
    res.flushHeaders();
    const r = { res, sent: 0 };
    this.responses.add(r);
    this.mostOpen = Math.max(this.mostOpen, this.responses.size);
    res.on('close', () => this.responses.delete(r));
  };

  stop(): void {
    clearInterval(this.timer);
  }
}
