import { chunkRecordFiles, originalKey, recordKey, sourceSegment, thumbnailKey } from './keys';

describe('object keys', () => {
  it('keeps a safe source name as it is (keys of earlier crawls stay valid)', () => {
    expect(sourceSegment('museum.example')).toBe('museum.example');
    expect(recordKey('museum.example', 'crawl-monitor:museum.example/batch:ab-0-g3')).toBe('records/museum.example/crawl-monitor_museum.example_batch_ab-0-g3.ndjson');
  });

  it('gives different sources different record directories, also when only unsafe characters or a long tail differ', () => {
    const long = 'x'.repeat(160);
    const names = ['a:b', 'a_b', `${long}1`, `${long}2`, 'host:8080', 'host_8080'];
    const dirs = names.map((n) => recordKey(n, 'u').split('/')[1]);
    expect(new Set(dirs).size).toBe(names.length);
    for (const d of dirs) expect(d).toMatch(/^[A-Za-z0-9._~-]{1,133}$/);
    expect(sourceSegment('a:b')).toMatch(/^a_b~[0-9a-f]{12}$/);
    expect(sourceSegment('..')).not.toBe('..');
  });

  it('derives thumbnail keys from the URL alone', () => {
    expect(thumbnailKey('https://a.example/1.jpg')).toBe(thumbnailKey('https://a.example/1.jpg'));
    expect(thumbnailKey('https://a.example/1.jpg')).not.toBe(thumbnailKey('https://a.example/2.jpg'));
    expect(thumbnailKey('https://a.example/1.jpg')).toMatch(/^thumbnails\/[0-9a-f]{2}\/[0-9a-f]{64}\.jpg$/);
    expect(thumbnailKey('https://a.example/1.jpg', 'webp')).toBe(thumbnailKey('https://a.example/1.jpg').replace(/\.jpg$/, '.webp'));
  });

  it('keys an original by its bytes\' sha256, with the extension and content type of the format read from them', () => {
    const sha = 'ab'.repeat(32);
    expect(originalKey(sha, 'jpeg')).toEqual({ key: `originals/ab/${sha}.jpg`, contentType: 'image/jpeg' });
    expect(originalKey(sha, 'heif')).toEqual({ key: `originals/ab/${sha}.heic`, contentType: 'image/heic' });
    expect(originalKey(sha, 'tiff').key).toMatch(/\.tif$/);
    // Only a hash names an object there: nothing else can reach another key.
    expect(() => originalKey('../records/x', 'png')).toThrow(/not a sha256/);
  });

  it('gives every long record unit a key of its own instead of cutting it off', () => {
    const long = `crawl-monitor:${'very-long-host-name.'.repeat(8)}example/batch:abc-1`;
    const g1 = recordKey('s', `${long}-g1`);
    const g2 = recordKey('s', `${long}-g2`);
    expect(g1).not.toBe(g2);
    expect(g1.length).toBeLessThan(200);
  });

  it('finds the record files of every run of a chunk, and no other chunk\'s', () => {
    const { prefix, rest } = chunkRecordFiles('s', 'm1-0');
    const matches = (key: string) => key.startsWith(prefix) && rest.test(key.slice(prefix.length));
    expect(recordKey('s', { chunkId: 'm1-0', run: '6e21bccacd22', part: 'g3' })).toBe('records/s/m1-0/6e21bccacd22-g3.ndjson');
    expect(matches(recordKey('s', { chunkId: 'm1-0', run: '6e21bccacd22', part: 'g3' }))).toBe(true);
    expect(matches(recordKey('s', { chunkId: 'm1-0', run: '400e2bf580ab', part: 'g1-failed' }))).toBe(true);
    expect(matches(recordKey('s', { chunkId: 'm1-01', run: '6e21bccacd22', part: 'g3' }))).toBe(false);
    // A chunk id from an operator's addWork cannot climb out of its directory.
    expect(recordKey('s', { chunkId: '..', run: '6e21bccacd22', part: 'g1' })).not.toContain('/../');
  });
});
