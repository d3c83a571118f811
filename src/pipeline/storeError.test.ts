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

  it('says plainly that the S3 store could not be reached or did not answer in time', () => {
    const connect = Object.assign(new Error('@smithy/node-http-handler - the request socket did not establish a connection with the server within the configured timeout of 10000 ms.'), { name: 'TimeoutError' });
    expect(describeStoreError(connect)).toBe('no connection to the store within 10 s (TimeoutError)');
    const request = Object.assign(new Error('@smithy/node-http-handler - [ERROR] a request has exceeded the configured 60000 ms requestTimeout.'), { name: 'TimeoutError', code: 'ETIMEDOUT' });
    expect(describeStoreError(request)).toBe('the store did not answer within 60 s (ETIMEDOUT)');
  });
});
