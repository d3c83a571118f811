import { createLogger } from './log';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ write: (s: string) => { lines.push(JSON.parse(s) as Record<string, unknown>); } }, 'info');
  return { logger, lines };
}

describe('log lines', () => {
  it('show an error logged under `error` (as the Temporal SDK logs failures) with its message and type', () => {
    const { logger, lines } = capture();
    logger.warn({ error: new TypeError('monitor not found') }, 'Workflow failed');
    expect(lines[0]!.error).toMatchObject({ type: 'TypeError', message: 'monitor not found' });
    expect(String((lines[0]!.error as { stack: string }).stack)).toContain('log.test');
  });

  it('never carry credentials, at the top level or one object down', () => {
    const { logger, lines } = capture();
    logger.info({ s3: { endpoint: 'http://127.0.0.1:9000', accessKeyId: 'AKIA123', secretAccessKey: 'shh' }, credentials: { a: 1 } }, 'store');
    const line = JSON.stringify(lines[0]);
    expect(line).not.toContain('AKIA123');
    expect(line).not.toContain('shh');
    expect(line).toContain('127.0.0.1:9000');
    expect(lines[0]!.credentials).toBe('[redacted]');
  });
});
