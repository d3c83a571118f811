import { describeStoreError } from './storeError';

describe('what an operator is told when the store fails', () => {
  it('names the error once, on one line, without the stack', () => {
    const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    expect(describeStoreError(enospc)).toBe('ENOSPC: no space left on device, write');
    const s3 = Object.assign(new Error('Access Denied'), { name: 'AccessDenied' });
    expect(describeStoreError(s3)).toBe('AccessDenied: Access Denied');
    expect(describeStoreError(new Error('socket hang up\n  at somewhere'))).toBe('socket hang up at somewhere');
    expect(describeStoreError('x'.repeat(500))).toHaveLength(200);
  });
});
