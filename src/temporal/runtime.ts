import net from 'node:net';
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import { log } from '../shared/log';
import { isUnreachableRetry, ServerReachability, type ReachabilityNote } from './serverReachability';

let installed = false;
let metricsServed = false;

const RANK: Record<LogLevel | 'OFF', number> = { TRACE: 0, DEBUG: 1, INFO: 2, WARN: 3, ERROR: 4, OFF: 5 };
const LEVELS: LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];

function asLevel(v: string | undefined, fallback: LogLevel): LogLevel {
  const up = v?.toUpperCase() as LogLevel | undefined;
  return up && LEVELS.includes(up) ? up : fallback;
}

/**
 * Which SDK log entries reach our logger. The SDK's own internals (worker lifecycle, core) are
 * noisy below WARN, so they follow TEMPORAL_LOG_LEVEL (WARN). Our own workflow code's messages
 * (a monitor's throttled / cooling / resumed / paused transitions, grants revoked) also arrive
 * through the SDK, tagged `sdkComponent: workflow`; at WARN a worker's log showed none of the
 * breaker's transitions, only a permanent halt. They follow `ownLevel` instead.
 */
export function makeSdkLogFilter(sdkLevel: LogLevel, ownLevel: () => LogLevel | 'OFF', serverGone: () => boolean = () => false): (level: LogLevel, meta: Record<string, unknown> | undefined) => boolean {
  return (level, meta) => {
    const component = meta?.sdkComponent;
    const floor = component === 'workflow' || component === 'activity' ? ownLevel()
      : serverGone() && RANK[sdkLevel] < RANK.ERROR ? 'ERROR' : sdkLevel;
    return RANK[level] >= RANK[floor];
  };
}

let serverGoneExpected = false;

/**
 * Ctrl-C stops `crawl run`'s embedded server with it (the terminal signals the server's process
 * too), while the worker is still handing back its activities: each retry against the closed
 * port was a warning, 42 JSON lines on the terminal after a Ctrl-C at 200 images/s. Once the
 * server is meant to be gone, only the SDK's errors are logged.
 */
export function expectServerGone(): void {
  serverGoneExpected = true;
}

/** The level of our own workflow and activity messages: WARN unless a command asks otherwise. */
let ownMessagesLevel: LogLevel | 'OFF' = 'WARN';

/**
 * A long-running worker logs its workflows' state transitions at INFO: they are what an operator
 * reads back after an incident. `crawl run` does not: it prints each source's new state itself,
 * and on a terminal it logs none of them ('OFF'): a JSON line there broke up its progress bar
 * (the demo's permanent halt printed its ALERT in the middle of the bar, next to the run's own
 * "broken: HALTED" line).
 */
export function logWorkflowMessagesAt(level: LogLevel | 'OFF'): void {
  ownMessagesLevel = level;
}

/**
 * CRAWL_METRICS_ADDRESS: where a worker serves Prometheus metrics (`/metrics`), the SDK's and
 * the crawl's; unset, none. The SDK's exporter takes an IP and a port, not a host name.
 */
export function metricsAddressFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return ipPortFromEnv('CRAWL_METRICS_ADDRESS', 9464, env)?.text;
}

/** An `IP:port` setting (`0.0.0.0:9464`, `[::]:9464`; not a host name), or undefined when unset. */
export function ipPortFromEnv(name: string, examplePort: number, env: NodeJS.ProcessEnv = process.env): { text: string; host: string; port: number } | undefined {
  const value = env[name]?.trim();
  if (!value) return undefined;
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  const ip = m?.[1] ?? m?.[2] ?? '';
  const port = Number(m?.[3]);
  if (!m || net.isIP(ip) !== (m[1] !== undefined ? 6 : 4) || port < 1 || port > 65_535) {
    throw new Error(`${name} must be IP:port, e.g. 0.0.0.0:${examplePort} or [::]:${examplePort} (not a host name), got ${JSON.stringify(value)}`);
  }
  return { text: value, host: ip, port };
}

/** Whether this process serves metrics (installTemporalRuntime was given an address). */
export function servesMetrics(): boolean {
  return metricsServed;
}

/**
 * Routes the Temporal SDK's own logs into our JSON-lines logger (once per process), and serves
 * Prometheus metrics at `metricsAddress` when one is given.
 */
export function installTemporalRuntime(level: LogLevel = asLevel(process.env.TEMPORAL_LOG_LEVEL, 'WARN'), metricsAddress?: string, forwardCoreLogs = false): void {
  if (installed) return;
  installed = true;
  const pass = makeSdkLogFilter(level, () => ownMessagesLevel, () => serverGoneExpected);
  // The SDK drops entries below the DefaultLogger's level before they reach us; our filter
  // decides per component, so the SDK passes everything from INFO (or the lower level asked) on.
  const lowest = LEVELS[Math.min(RANK[level], RANK.INFO)]!;
  const telemetryOptions = {
    telemetryOptions: {
      // Unless told to forward them, the SDK's core (Rust) writes its own log lines to stdout as
      // coloured text: a `crawl run` whose server went away printed "gRPC call
      // poll_workflow_task_queue retried 7 times" lines among its monitoring_update JSON. A
      // forwarding runtime keeps the process alive while it runs: see endIdleTemporalRuntime.
      ...(forwardCoreLogs ? { logging: { forward: {}, filter: { core: level, other: 'ERROR' as LogLevel } } } : {}),
      // Counters end in _total and durations are in seconds, as Prometheus's conventions ask.
      ...(metricsAddress === undefined ? {} : { metrics: { prometheus: { bindAddress: metricsAddress, countersTotalSuffix: true, useSecondsForDurations: true } } }),
    },
  };
  try {
    install(lowest, pass, telemetryOptions, RANK[level] < RANK.WARN);
  } catch (err) {
    // The exporter binds when the runtime is made: a port in use fails here, before any work.
    if (metricsAddress === undefined) throw err;
    throw new Error(`cannot serve metrics on ${metricsAddress} (CRAWL_METRICS_ADDRESS): ${(err as Error).message}`);
  }
  metricsServed = metricsAddress !== undefined;
}

const reachability = new ServerReachability();

/** Whether this process's SDK can reach its Temporal server (from its retry lines: see ServerReachability). */
export function serverOutage(): { sinceMs: number; error: string } | undefined {
  return reachability.outage();
}

function say(note: ReachabilityNote | undefined): void {
  if (note) log[note.level](note.fields, note.msg);
}

/**
 * While the SDK cannot reach the server, asks it every `everyMs` whether it answers, so that the
 * worker's log says when it is back (serverReachability.ts). Returns the function that stops it.
 */
export function watchServerReachability(connection: { workflowService: { getSystemInfo(req: object): Promise<unknown> } }, everyMs = 5_000): () => void {
  let asking = false;
  const timer = setInterval(() => {
    if (!reachability.down || asking) return;
    asking = true;
    connection.workflowService.getSystemInfo({}).then(() => say(reachability.reachable(Date.now())), () => undefined).finally(() => { asking = false; });
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

function install(lowest: LogLevel, pass: ReturnType<typeof makeSdkLogFilter>, telemetryOptions: object, keepRetryLines: boolean): void {
  Runtime.install({
    ...telemetryOptions,
    // The SDK would otherwise take SIGINT and SIGTERM from every command, and a command with
    // no worker (`crawl status --watch`) could not be stopped with Ctrl-C. Commands that must
    // stop in order handle them themselves (worker, run, dev-server).
    shutdownSignals: [],
    logger: new DefaultLogger(lowest, (entry) => {
      // One line for an outage instead of every call's retries; none once the server is meant to
      // be gone. TEMPORAL_LOG_LEVEL=DEBUG (or TRACE) keeps them, to debug a connection.
      if (isUnreachableRetry(entry.meta)) {
        // Noted whatever is logged: a worker's readiness check reads it (healthServer.ts).
        const note = serverGoneExpected ? undefined : reachability.unreachable(Date.now(), String(entry.meta?.error));
        if (!keepRetryLines) {
          say(note);
          return;
        }
      }
      if (!pass(entry.level, entry.meta)) return;
      const fields = { event: 'temporal.sdk', ...(entry.meta ?? {}) };
      const method = entry.level === 'ERROR' ? 'error' : entry.level === 'WARN' ? 'warn' : entry.level === 'INFO' ? 'info' : 'debug';
      log[method](fields, entry.message);
    }),
  });
}

/**
 * Ends the SDK's runtime when nothing uses it. It ends by itself when its last worker connection
 * closes; one that forwards core logs and never had one (a command with no worker, an error before
 * the worker connected) would keep the process from exiting.
 */
export async function endIdleTemporalRuntime(): Promise<void> {
  const runtime = Runtime._instance as (Runtime & { isIdle(): boolean }) | undefined;
  if (runtime?.isIdle()) await runtime.shutdown();
}
