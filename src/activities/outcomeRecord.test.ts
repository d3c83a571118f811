import { finishedFromRecord, recordOf } from './outcomeRecord';

describe('finishedFromRecord', () => {
  it('gives back the final outcome and the record fields a record was written from', () => {
    const outcome = { url: 'https://a.example/x.jpg', cls: 'done' as const, status: 200, ttfbMs: 12, totalMs: 40, sent: true, final: true, attempt: 2, sha: '0123abcd' };
    const extra = { format: 'jpeg', width: 640, sha256: `0123abcd${'e'.repeat(56)}`, thumbnailKey: 'thumbs/x.jpg' };
    const record = { ...recordOf('a.example', outcome), ...extra };
    const back = finishedFromRecord(JSON.parse(JSON.stringify(record)))!;
    expect(back.outcome).toEqual({ url: outcome.url, cls: 'done', status: 200, ttfbMs: 12, totalMs: 40, sent: false, final: true, attempt: 2, sha: '0123abcd' });
    // Written again, the same record, its time of recording included.
    expect(JSON.stringify({ ...recordOf('a.example', back.outcome), ...back.extra })).toBe(JSON.stringify(record));
  });

  it('keeps a reason and leaves out what the record has as null', () => {
    const record = recordOf('a.example', { url: 'https://a.example/p', cls: 'robots', reason: 'robots.txt disallows /p', sent: false, final: true, attempt: 1 });
    expect(finishedFromRecord(record)!.outcome).toEqual({ url: 'https://a.example/p', cls: 'robots', reason: 'robots.txt disallows /p', sent: false, final: true, attempt: 1 });
  });

  it('takes nothing that is not such a record', () => {
    for (const bad of [null, 'x', [], { url: 'u', outcome: 'done' }, { url: 'u', outcome: 'maybe', attempts: 1 }, { url: 3, outcome: 'done', attempts: 1 }]) {
      expect(finishedFromRecord(bad)).toBeUndefined();
    }
  });
});
