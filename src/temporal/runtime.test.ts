import { makeSdkLogFilter } from './runtime';

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
});
