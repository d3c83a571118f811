import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import { log } from '../shared/log';

let installed = false;

/** Routes the Temporal SDK's own logs into our JSON-lines logger (once per process). */
export function installTemporalRuntime(level: LogLevel = (process.env.TEMPORAL_LOG_LEVEL as LogLevel) ?? 'WARN'): void {
  if (installed) return;
  installed = true;
  Runtime.install({
    // The SDK would otherwise take SIGINT and SIGTERM from every command, and a command with
    // no worker (`crawl status --watch`) could not be stopped with Ctrl-C. Commands that must
    // stop in order handle them themselves (worker, run, dev-server).
    shutdownSignals: [],
    logger: new DefaultLogger(level, (entry) => {
      const fields = { event: 'temporal.sdk', ...(entry.meta ?? {}) };
      const method = entry.level === 'ERROR' ? 'error' : entry.level === 'WARN' ? 'warn' : entry.level === 'INFO' ? 'info' : 'debug';
      log[method](fields, entry.message);
    }),
  });
}
