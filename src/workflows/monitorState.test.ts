import { MonitorModel } from './monitorState';

// The batch no longer asks again after using a grant; these pin the bookkeeping that makes
// that safe: the monitor subtracts every grant the batch has not acknowledged.
describe('MonitorModel token bookkeeping', () => {
  const T0 = 1_000_000;

  function modelWithBatch(): { m: MonitorModel; batchId: string } {
    const m = MonitorModel.fromInput({ source: 's', config: { rate: 10 }, work: [{ chunkId: 'c1', count: 500 }] }, T0);
    const [chunk] = m.takeChunksToStart();
    m.batchStarted('b1', chunk!);
    return { m, batchId: 'b1' };
  }

  it('counts granted slots against the last request until the batch reports again', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    const first = m.planGrants(T0);
    expect(first).toHaveLength(1);
    expect(first[0]!.slots).toBeLessThan(500); // a full window: rate 10 x 40 s
    expect(m.wants()[0]!.wanted).toBe(500 - first[0]!.slots);
  });

  it('takes the token request carried by an outcome report, including slots handed back', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    const [g1] = m.planGrants(T0);
    // The batch used grant 1, got 7 URLs back unused, and reports with its new count.
    const after = 500 - g1!.slots + 7;
    m.onReport({ batchId, grantId: 1, outcomes: [], unused: 7, tokens: { unassigned: after, grantsSeen: 1 } }, T0 + 5_000);
    expect(m.wants()[0]!.wanted).toBe(after);
  });

  it('still subtracts a grant the batch had not seen when it reported', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    const [g1] = m.planGrants(T0);
    const [g2] = m.planGrants(g1!.endMs);
    expect(g2).toBeDefined();
    // Report written after grant 1 only: grant 2 is still outstanding from the batch's view.
    m.onReport({ batchId, grantId: 1, outcomes: [], unused: 0, tokens: { unassigned: 500 - g1!.slots, grantsSeen: 1 } }, g1!.endMs + 10);
    expect(m.wants()[0]!.wanted).toBe(500 - g1!.slots - g2!.slots);
  });

  it('leaves the bookkeeping alone for a report without a token request', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 500, grantsSeen: 0 });
    const [g1] = m.planGrants(T0);
    m.onReport({ batchId, grantId: 1, outcomes: [], unused: 3 }, T0 + 5_000);
    expect(m.wants()[0]!.wanted).toBe(500 - g1!.slots);
  });

  it('gives a batch whose worker misses slots enough spare slots to finish its last window', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 12, grantsSeen: 0 });
    const outcomes = Array.from({ length: 6 }, () => ({ url: '', cls: 'done' as const, sent: true, final: true, attempt: 1 }));
    // Half the slots of a grant went by while the worker was busy.
    for (let i = 0; i < 10; i++) m.onReport({ batchId, grantId: 0, outcomes, unused: 6, missedSlots: 6 }, T0);
    expect(m.stats(T0).tokens.missed).toBe(60);
    const [g] = m.planGrants(T0);
    expect(g!.slots).toBeGreaterThanOrEqual(23); // 12 wanted, ~50% missed
    expect(g!.slots).toBeLessThanOrEqual(24);
    expect(m.wants()[0]!.wanted).toBe(0);
  });

  it('plans two spare slots when no slot was missed', () => {
    const { m, batchId } = modelWithBatch();
    m.onTokenRequest({ batchId, unassigned: 12, grantsSeen: 0 });
    m.onReport({ batchId, grantId: 0, outcomes: [], unused: 0, missedSlots: 0 }, T0);
    expect(m.planGrants(T0)[0]!.slots).toBe(14);
  });

  it('grants a longer window while its worker misses slots, so a grant still serves a window of URLs', () => {
    const fast = () => {
      const m = MonitorModel.fromInput({ source: 's', config: { rate: 50 }, work: [{ chunkId: 'c1', count: 500 }] }, T0);
      m.batchStarted('b1', m.takeChunksToStart()[0]!);
      m.onTokenRequest({ batchId: 'b1', unassigned: 500, grantsSeen: 0 });
      return m;
    };
    const usual = fast().planGrants(T0)[0]!;
    const busy = fast();
    const outcomes = Array.from({ length: 50 }, () => ({ url: '', cls: 'done' as const, sent: true, final: true, attempt: 1 }));
    // The worker sent in half the slots: its CPU is the limit, not the site.
    for (let i = 0; i < 10; i++) busy.onReport({ batchId: 'b1', grantId: 0, outcomes, unused: 0, missedSlots: 50 }, T0);
    const stretched = busy.planGrants(T0)[0]!;
    expect(stretched.intervalMs).toBe(usual.intervalMs); // the site's load is unchanged
    expect(stretched.endMs - stretched.startMs).toBeGreaterThan(1.9 * (usual.endMs - usual.startMs));
    expect(stretched.slots).toBeGreaterThan(1.9 * usual.slots);
    expect(busy.wants()[0]!.wanted).toBe(Math.max(0, 500 - stretched.slots));
  });
});
