import { RedirectTargets, TARGET_TTL_MS } from './redirectTargets';

describe('images many URLs redirect to', () => {
  it('keeps a target\'s result for ten minutes, then asks again', () => {
    let now = 1_000;
    const t = new RedirectTargets(() => now);
    t.remember('https://shop.example/no-image.png', { record: { thumbnailKey: 'thumbnails/ab.jpg', width: 40 }, status: 200, sha: '6450ba3e' });
    expect(t.get('https://shop.example/no-image.png')).toMatchObject({ record: { thumbnailKey: 'thumbnails/ab.jpg' }, status: 200, sha: '6450ba3e' });
    expect(t.get('https://shop.example/other.png')).toBeUndefined();
    now += TARGET_TTL_MS;
    expect(t.get('https://shop.example/no-image.png')).toBeDefined();
    now += 1;
    expect(t.get('https://shop.example/no-image.png')).toBeUndefined();
  });

  it('keeps at most a thousand targets, dropping the oldest', () => {
    const t = new RedirectTargets(() => 0);
    for (let i = 0; i <= 1_000; i++) t.remember(`https://s.example/${i}.png`, { record: {} });
    expect(t.get('https://s.example/0.png')).toBeUndefined();
    expect(t.get('https://s.example/1.png')).toBeDefined();
    expect(t.get('https://s.example/1000.png')).toBeDefined();
  });
});
