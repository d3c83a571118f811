import http from 'node:http';

/**
 * `CRAWL_HEALTH_ADDRESS=IP:port`: a worker answers health checks over HTTP, for an orchestrator
 * (Kubernetes probes, a Docker healthcheck) and for a person with curl.
 *
 * - `/healthz` (liveness): 200 while the process's event loop answers and its worker has not
 *   failed. Not failed for the Temporal server being away: a restarted worker would not reach it
 *   either, and restarts of every worker at once would end their downloads in flight.
 * - `/readyz` (readiness): 200 only while the worker runs and reaches its Temporal server; 503
 *   while it starts, drains after SIGTERM, or cannot reach the server, with the reason. A rolling
 *   upgrade waits on it before it stops the next old worker.
 *
 * The answer is JSON either way: `{"status": "ok"|"unavailable", "worker": state, "reasons": [...],
 * ...}`. Served on the JS thread on purpose: an event loop stuck in a loop answers nothing, which
 * is what a liveness probe is for (the Prometheus exporter, on the SDK's own thread, would answer).
 */

export type WorkerPhase = 'STARTING' | 'INITIALIZED' | 'RUNNING' | 'STOPPING' | 'DRAINING' | 'DRAINED' | 'STOPPED' | 'FAILED';

export interface HealthFacts {
  worker: WorkerPhase;
  taskQueue: string;
  startedMs: number;
  /** The Temporal server not answering since then, and why; undefined while it answers. */
  serverOutage?: { sinceMs: number; error: string };
}

export interface HealthAnswer {
  status: number;
  body: Record<string, unknown>;
}

const STOPPING: ReadonlySet<WorkerPhase> = new Set(['STOPPING', 'DRAINING', 'DRAINED', 'STOPPED']);

/** The answer to one health check, from what the worker knows now. */
export function healthAnswer(path: string, facts: HealthFacts, nowMs: number): HealthAnswer {
  const which = path.split('?')[0];
  if (which !== '/healthz' && which !== '/readyz') return { status: 404, body: { error: 'not found: GET /healthz (alive) or /readyz (running and reaching its Temporal server)' } };
  const reasons: string[] = [];
  if (facts.worker === 'FAILED') reasons.push('the worker failed (see its log); the process ends');
  if (which === '/readyz') {
    if (facts.worker === 'STARTING' || facts.worker === 'INITIALIZED') reasons.push('the worker is starting');
    if (STOPPING.has(facts.worker)) reasons.push(`the worker is stopping (${facts.worker.toLowerCase()})`);
    if (facts.serverOutage) {
      const forS = Math.max(0, Math.round((nowMs - facts.serverOutage.sinceMs) / 1000));
      reasons.push(`cannot reach the Temporal server for ${forS} s (${facts.serverOutage.error}); the worker keeps trying`);
    }
  }
  return {
    status: reasons.length ? 503 : 200,
    body: {
      status: reasons.length ? 'unavailable' : 'ok',
      worker: facts.worker,
      taskQueue: facts.taskQueue,
      upS: Math.round((nowMs - facts.startedMs) / 1000),
      temporalServer: facts.serverOutage ? { reachable: false, since: new Date(facts.serverOutage.sinceMs).toISOString() } : { reachable: true },
      ...(reasons.length ? { reasons } : {}),
    },
  };
}

/**
 * Serves healthAnswer at `host:port` until closed. Fails, saying which setting, when the address
 * cannot be bound: before the worker does anything.
 */
export async function serveHealth(address: { text: string; host: string; port: number }, facts: () => HealthFacts): Promise<{ close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    const answer = healthAnswer(req.url ?? '/', facts(), Date.now());
    const body = `${JSON.stringify(answer.body)}\n`;
    res.writeHead(answer.status, { 'content-type': 'application/json', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  // A probe's connection must not hold the worker's exit.
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`cannot serve health checks on ${address.text} (CRAWL_HEALTH_ADDRESS): ${err.message}`)));
    server.listen(address.port, address.host, () => resolve());
  });
  server.unref();
  return {
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
