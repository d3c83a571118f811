import pino from 'pino';

// Structured JSON lines on stderr so stdout stays free for command output (tables, NDJSON).
// Redaction is by key name: credentials may sit in config objects that get logged whole.
export const log = pino(
  {
    level: process.env.CRAWL_LOG_LEVEL ?? 'info',
    base: { pid: process.pid },
    redact: {
      paths: [
        '*.secretAccessKey', '*.accessKeyId', '*.sessionToken', '*.password', '*.apiKey',
        '*.authorization', '*.credentials', 'credentials', 'secretAccessKey', 'accessKeyId',
      ],
      censor: '[redacted]',
    },
  },
  pino.destination({ fd: 2, sync: true }),
);

export type Logger = typeof log;
