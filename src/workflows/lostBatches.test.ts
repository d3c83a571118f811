import { PROBE_AFTER_MS, REVIVE_AFTER_MS, dueForRevival, heardFrom, markLost, markRevived, nextWatchMs, silentBatches } from './lostBatches';
import type { BatchEntry } from './monitorState';

const entry = (over: Partial<BatchEntry> = {}): BatchEntry => ({
  batchId: 'm/batch:c0', chunkId: 'c0', urls: 10, unassigned: 4, grantsSent: 2, unseen: [[2, 3]], heardMs: 1_000, ...over,
});

describe('lost batches', () => {
  it('asks a batch only once it has been silent for the probe interval, and not one known lost', () => {
    const b = entry();
    expect(silentBatches([b], 1_000 + PROBE_AFTER_MS - 1)).toEqual([]);
    expect(silentBatches([b], 1_000 + PROBE_AFTER_MS)).toEqual([b]);
    heardFrom(b, 2_000);
    expect(silentBatches([b], 1_000 + PROBE_AFTER_MS)).toEqual([]);
    markLost(b, 3_000);
    expect(silentBatches([b], 10 * PROBE_AFTER_MS)).toEqual([]);
  });

  it('takes a lost batch out of granting, starts it again after its fetch activity has had time to stop, and counts the starts', () => {
    const b = entry();
    markLost(b, 5_000);
    expect(b).toMatchObject({ unassigned: 0, unseen: [], lostMs: 5_000 });
    // Found lost a second time before it started again: the first finding counts.
    markLost(b, 9_000);
    expect(dueForRevival([b], 5_000 + REVIVE_AFTER_MS - 1)).toEqual([]);
    expect(dueForRevival([b], 5_000 + REVIVE_AFTER_MS)).toEqual([b]);
    markRevived(b, 70_000);
    expect(b).toMatchObject({ grantsSent: 0, unseen: [], unassigned: 0, heardMs: 70_000, revivals: 1 });
    expect(b.lostMs).toBeUndefined();
  });

  it('a lost batch heard from again (someone else started it) is no longer lost', () => {
    const b = entry();
    markLost(b, 5_000);
    heardFrom(b, 6_000);
    expect(dueForRevival([b], 10 * REVIVE_AFTER_MS)).toEqual([]);
  });

  it('wakes the monitor for the earliest probe or revival', () => {
    expect(nextWatchMs([])).toBeUndefined();
    const lost = entry({ batchId: 'a' });
    markLost(lost, 100_000);
    expect(nextWatchMs([entry({ heardMs: 1_000 }), lost])).toBe(Math.min(1_000 + PROBE_AFTER_MS, 100_000 + REVIVE_AFTER_MS));
  });
});
