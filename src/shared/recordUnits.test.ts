import { batchRunUnit } from './recordUnits';

describe('record units of batch runs', () => {
  it('tells apart two runs of a chunk started within the same minute (time-ordered run ids)', () => {
    // Two UUIDv7 run ids a few seconds apart share their first 8 hex digits.
    const a = batchRunUnit('m1-0', '01a20724-4401-70ec-85cf-6e21bccacd22');
    const b = batchRunUnit('m1-0', '01a20724-f3e9-744a-a82e-400e2bf580ab');
    expect(a).not.toEqual(b);
    expect(a).toEqual({ chunkId: 'm1-0', run: '6e21bccacd22' });
    // The same run always names the same unit: a retried activity rewrites its own file.
    expect(batchRunUnit('m1-0', '01a20724-4401-70ec-85cf-6e21bccacd22')).toEqual(a);
  });
});
