import { makeSdkLogFilter, metricsAddressFromEnv } from './runtime';

describe('which SDK log entries reach our log', () => {
  it('passes our workflow messages at their own level and the SDK\'s at TEMPORAL_LOG_LEVEL', () => {
    let own: 'INFO' | 'WARN' | 'OFF' = 'INFO';
    const pass = makeSdkLogFilter('WARN', () => own);
    expect(pass('INFO', { sdkComponent: 'workflow' })).toBe(true);
    expect(pass('DEBUG', { sdkComponent: 'workflow' })).toBe(false);
    expect(pass('INFO', { sdkComponent: 'worker' })).toBe(false);
    expect(pass('INFO', undefined)).toBe(false);
    expect(pass('WARN', { sdkComponent: 'core' })).toBe(true);
    own = 'WARN';
    expect(pass('INFO', { sdkComponent: 'workflow' })).toBe(false);
    // `crawl run` on a terminal: it reports state changes itself, a permanent halt included.
    own = 'OFF';
    expect(pass('ERROR', { sdkComponent: 'workflow' })).toBe(false);
    expect(pass('ERROR', { sdkComponent: 'worker' })).toBe(true);
  });

  it('keeps only the SDK\'s errors once the server is meant to be gone (crawl run interrupted)', () => {
    let gone = false;
    const pass = makeSdkLogFilter('WARN', () => 'INFO', () => gone);
    expect(pass('WARN', { sdkComponent: 'core' })).toBe(true);
    gone = true;
    expect(pass('WARN', { sdkComponent: 'core' })).toBe(false);
    expect(pass('ERROR', { sdkComponent: 'core' })).toBe(true);
    expect(pass('INFO', { sdkComponent: 'workflow' })).toBe(true); // our own messages keep their level
  });
});

describe('CRAWL_METRICS_ADDRESS', () => {
  it('takes an IP and a port, and names what is wrong otherwise', () => {
    expect(metricsAddressFromEnv({})).toBeUndefined();
    expect(metricsAddressFromEnv({ CRAWL_METRICS_ADDRESS: ' ' })).toBeUndefined();
    expect(metricsAddressFromEnv({ CRAWL_METRICS_ADDRESS: '0.0.0.0:9464' })).toBe('0.0.0.0:9464');
    expect(metricsAddressFromEnv({ CRAWL_METRICS_ADDRESS: '[::]:9464' })).toBe('[::]:9464');
    // The SDK's exporter refuses these with "invalid socket address syntax".
    for (const bad of ['localhost:9464', '9464', '0.0.0.0', '0.0.0.0:0', '0.0.0.0:70000', '::1:9464', '[127.0.0.1]:9464']) {
      expect(() => metricsAddressFromEnv({ CRAWL_METRICS_ADDRESS: bad })).toThrow(`CRAWL_METRICS_ADDRESS must be IP:port, e.g. 0.0.0.0:9464 or [::]:9464 (not a host name), got ${JSON.stringify(bad)}`);
    }
  });
});
