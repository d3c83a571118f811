import { recordKey, sourceSegment, thumbnailKey } from './keys';

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
  });
});
