import { nextSameImage, SAME_IMAGE_NOTE_AFTER, sameImageNote } from './sameImage';

describe('one image served for many URLs', () => {
  const image = (sha: string) => ({ cls: 'done' as const, final: true, sha });

  it('counts images in a row with the same sha; another image starts a new run, other outcomes leave it', () => {
    let run = nextSameImage(undefined, image('aaaa0000'));
    run = nextSameImage(run, image('aaaa0000'));
    expect(run).toEqual({ sha: 'aaaa0000', run: 2 });
    // A 404, a page, a retried error and an image of an older worker (no sha) neither count nor break it.
    for (const o of [{ cls: 'linkrot' as const, final: true }, { cls: 'content' as const, final: true }, { cls: 'error' as const, final: false }, { cls: 'done' as const, final: true }]) run = nextSameImage(run, o);
    expect(run).toEqual({ sha: 'aaaa0000', run: 2 });
    expect(nextSameImage(run, image('bbbb1111'))).toEqual({ sha: 'bbbb1111', run: 1 });
  });

  it('is told from 50 in a row, with the command to stop asking while the source runs', () => {
    expect(sameImageNote({ sha: 'aaaa0000', run: SAME_IMAGE_NOTE_AFTER - 1 }, 'crawl pause s')).toBeUndefined();
    expect(sameImageNote(null)).toBeUndefined();
    expect(sameImageNote({ sha: 'aaaa0000', run: SAME_IMAGE_NOTE_AFTER }, 'crawl pause s')).toMatch(/^one image for every URL: its last 50\+ images were the same file \(sha256 aaaa0000\.\.\.\), .*; `crawl pause s` stops asking$/);
    expect(sameImageNote({ sha: 'aaaa0000', run: 500 })).toMatch(/Their records show it$/);
  });
});
