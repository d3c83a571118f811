import pino from 'pino';

/**
 * Structured JSON lines. Redaction is by key name: credentials may sit in config objects that
 * get logged whole. The SDK logs failures under `error`: without a serializer an Error prints
 * as {}, which hid why a workflow had failed.
 */
export function createLogger(destination: pino.DestinationStream, level = process.env.CRAWL_LOG_LEVEL || 'info') {
  // A misspelt level must not stop the crawler from starting (pino throws on it): say so instead.
  const known = Object.keys(pino.levels.values).includes(level) || level === 'silent';
  const logger = pino(
    {
      level: known ? level : 'info',
      base: { pid: process.pid },
      serializers: { err: pino.stdSerializers.err, error: pino.stdSerializers.err },
      redact: {
        paths: [
          '*.secretAccessKey', '*.accessKeyId', '*.sessionToken', '*.password', '*.apiKey',
          '*.authorization', '*.credentials', 'credentials', 'secretAccessKey', 'accessKeyId',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
  if (!known) logger.warn({ event: 'config', setting: 'CRAWL_LOG_LEVEL', value: level }, `CRAWL_LOG_LEVEL must be one of ${Object.keys(pino.levels.values).join(', ')} or silent; using info`);
  return logger;
}

// On stderr, so stdout stays free for command output (tables, NDJSON).
export const log = createLogger(pino.destination({ fd: 2, sync: true }));

export type Logger = typeof log;
