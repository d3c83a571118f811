import path from 'node:path';
import { connectionSettings } from './connectionSettings';

const FIXTURES = path.resolve(__dirname, '..', '..', 'test', 'fixtures', 'tls', 'temporal');

describe('the Temporal connection settings, from the Temporal CLI\'s environment variables', () => {
  it('is a plain connection to 127.0.0.1:7233 without any, and counts empty variables as unset', () => {
    expect(connectionSettings({})).toEqual({ address: '127.0.0.1:7233' });
    expect(connectionSettings({ TEMPORAL_ADDRESS: '', TEMPORAL_API_KEY: '', TEMPORAL_TLS: ' ' })).toEqual({ address: '127.0.0.1:7233' });
  });

  it('turns TLS on with an API key (Temporal Cloud) and passes gRPC metadata', () => {
    expect(connectionSettings({ TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233', TEMPORAL_API_KEY: 'secret', TEMPORAL_GRPC_META_X_TEAM: 'crawl' }))
      .toEqual({ address: 'ns.acct.tmprl.cloud:7233', apiKey: 'secret', tls: true, metadata: { 'x-team': 'crawl' } });
  });

  it('reads an mTLS certificate pair and the server CA from files', () => {
    const s = connectionSettings({
      TEMPORAL_ADDRESS: 'temporal.internal:7233', TEMPORAL_TLS_SERVER_NAME: 'temporal',
      TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(FIXTURES, 'client.pem'), TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(FIXTURES, 'client.key'),
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: path.join(FIXTURES, 'ca.pem'),
    });
    expect(s.tls).toMatchObject({ serverNameOverride: 'temporal', clientCertPair: { crt: expect.any(Uint8Array), key: expect.any(Uint8Array) }, serverRootCACertificate: expect.any(Uint8Array) });
    expect(Buffer.from((s.tls as { clientCertPair: { crt: Uint8Array } }).clientCertPair.crt).toString()).toMatch(/^-----BEGIN CERTIFICATE-----/);
  });

  it.each([
    [{ TEMPORAL_TLS_CLIENT_CERT_PATH: '/x/client.pem' }, /TEMPORAL_TLS_CLIENT_CERT_PATH \(or _DATA\) and TEMPORAL_TLS_CLIENT_KEY_PATH \(or _DATA\) go together/],
    [{ TEMPORAL_TLS_CLIENT_KEY_DATA: 'k' }, /go together: mTLS needs the certificate and its key/],
    [{ TEMPORAL_TLS: 'true', TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true' }, /TEMPORAL_TLS_DISABLE_HOST_VERIFICATION is not supported here .* set TEMPORAL_TLS_SERVER_NAME/],
    [{ TEMPORAL_TLS_SERVER_CA_CERT_PATH: '/no/such/ca.pem' }, /cannot read the Temporal connection settings \(TEMPORAL_TLS_\*\): ENOENT: no such file or directory, open '\/no\/such\/ca\.pem'/],
  ])('refuses %j, saying why, rather than connect without what was asked for', (env, why) => {
    expect(() => connectionSettings(env)).toThrow(why);
  });
});
