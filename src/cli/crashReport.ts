import type { EventEmitter } from 'node:events';
import type { Logger } from '../shared/log';

/**
 * An error nothing caught (a bug) ends the process as Node would, but said the way the rest of
 * our output is: a JSON log line with the stack for the log collector, and one line for the
 * operator that says what to do. Node's default is a bare stack trace on stderr. Records already
 * written stay; process.exit lets the embedded server's exit hook stop it (devServer.ts).
 */
export function installCrashReport(
  log: Pick<Logger, 'fatal'>,
  target: Pick<EventEmitter, 'on'> = process,
  write: (text: string) => void = (t) => { process.stderr.write(t); },
  exit: (code: number) => void = (code) => process.exit(code),
): void {
  const report = (kind: string) => (err: unknown) => {
    log.fatal({ event: 'crash', kind, err }, `the crawl process failed: ${kind}`);
    const message = err instanceof Error ? err.message : String(err);
    write(`crawl: internal error (${kind}): ${message}. This is a bug; nothing already recorded is lost: run the same command again to continue.\n`);
    exit(1);
  };
  target.on('uncaughtException', report('uncaught exception'));
  target.on('unhandledRejection', report('unhandled rejection'));
}

/**
 * Node's process warnings as JSON log lines, like the rest of stderr, instead of its plain-text
 * "(node:123) Warning: ...". Not DEP0123: gRPC sets a TLS server name to the address, and an IP
 * address there (TEMPORAL_ADDRESS=10.0.0.5:7233 with TLS) warns on every command, with nothing
 * for an operator to do.
 */
export function logProcessWarnings(log: Pick<Logger, 'warn'>, target: Pick<EventEmitter, 'on' | 'removeAllListeners'> = process): void {
  target.removeAllListeners('warning');
  target.on('warning', (w: Error & { code?: string }) => {
    if (w.code === 'DEP0123') return;
    log.warn({ event: 'node.warning', name: w.name, ...(w.code ? { code: w.code } : {}) }, w.message);
  });
}
