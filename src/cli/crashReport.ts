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
