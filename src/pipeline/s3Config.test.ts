import { s3ConfigFromEnv, s3SettingsWithoutStore } from './store';

describe('S3 settings from the environment', () => {
  const base = { CRAWL_S3_BUCKET: 'b' };

  it('reads a MinIO-style configuration, the prefix as a folder', () => {
    expect(s3ConfigFromEnv({ ...base, CRAWL_S3_ENDPOINT: 'http://127.0.0.1:9000', CRAWL_S3_FORCE_PATH_STYLE: 'TRUE', CRAWL_S3_PREFIX: 'crawl', CRAWL_S3_REGION: 'eu-west-1' }))
      .toEqual({ bucket: 'b', prefix: 'crawl/', endpoint: 'http://127.0.0.1:9000', region: 'eu-west-1', forcePathStyle: true });
    expect(s3ConfigFromEnv({ ...base, CRAWL_S3_PREFIX: 'a/b/', AWS_REGION: 'us-west-2', CRAWL_S3_FORCE_PATH_STYLE: '0' }))
      .toEqual({ bucket: 'b', prefix: 'a/b/', endpoint: undefined, region: 'us-west-2', forcePathStyle: false });
    expect(s3ConfigFromEnv(base)).toMatchObject({ prefix: '', forcePathStyle: false });
  });

  it('refuses what the SDK would only trip over at the first request', () => {
    expect(() => s3ConfigFromEnv({})).toThrow('CRAWL_STORE=s3 needs CRAWL_S3_BUCKET');
    expect(() => s3ConfigFromEnv({ ...base, CRAWL_S3_ENDPOINT: 'minio:9000' })).toThrow(/CRAWL_S3_ENDPOINT must be an http\(s\) URL .* got "minio:9000"/);
    expect(() => s3ConfigFromEnv({ ...base, CRAWL_S3_ENDPOINT: 'not a url' })).toThrow(/CRAWL_S3_ENDPOINT must be an http\(s\) URL/);
    expect(() => s3ConfigFromEnv({ ...base, CRAWL_S3_ENDPOINT: 'http://key:secret@minio:9000' })).toThrow(/must not hold credentials/);
    expect(() => s3ConfigFromEnv({ ...base, CRAWL_S3_FORCE_PATH_STYLE: 'on' })).toThrow(/CRAWL_S3_FORCE_PATH_STYLE must be true or false, got "on"/);
    expect(() => s3ConfigFromEnv({ ...base, CRAWL_S3_PREFIX: '/crawl' })).toThrow(/must not start with "\/"/);
  });

  it('asks which store is meant when S3 settings come without CRAWL_STORE, rather than writing to the local disk without a word', () => {
    expect(s3SettingsWithoutStore({ CRAWL_S3_BUCKET: 'crawl', CRAWL_S3_ENDPOINT: 'http://minio:9000' })).toBe(
      'CRAWL_S3_BUCKET, CRAWL_S3_ENDPOINT are set, but CRAWL_STORE is not, and without it the store is a local directory: ' +
      'set CRAWL_STORE=s3 to use the S3 store, or CRAWL_STORE=local to keep the local directory');
    expect(s3SettingsWithoutStore({ CRAWL_S3_PREFIX: 'team/' })).toMatch(/^CRAWL_S3_PREFIX is set, but CRAWL_STORE is not/);
    expect(s3SettingsWithoutStore({ CRAWL_STORE: 'local', CRAWL_S3_BUCKET: 'crawl' })).toBeUndefined();
    expect(s3SettingsWithoutStore({ CRAWL_STORE: 's3', CRAWL_S3_BUCKET: 'crawl' })).toBeUndefined();
    expect(s3SettingsWithoutStore({ CRAWL_S3_BUCKET: ' ', AWS_REGION: 'us-east-1' })).toBeUndefined();
  });
});
