import type { ActivitySlotInfo, SlotPermit } from '@temporalio/worker';
import { ActivitySlots } from './activitySlots';

/** A network whose state the test sets. */
function network() {
  const listeners = new Set<() => void>();
  const net = {
    down: false,
    listen: (fn: () => void) => { listeners.add(fn); return () => listeners.delete(fn); },
    set(down: boolean) { net.down = down; for (const fn of listeners) fn(); },
  };
  return net;
}

const info = (activityType: string): ActivitySlotInfo => ({ type: 'activity', activityType });
const ctx = {} as never;

const reserve = (slots: ActivitySlots) => slots.reserveSlot(ctx, new AbortController().signal);

describe('ActivitySlots', () => {
  it('hands out up to its maximum, used or reserved, and frees a slot when it is released', async () => {
    const slots = new ActivitySlots(2, network());
    const a = slots.tryReserveSlot()!;
    expect(await reserve(slots)).toBeDefined();
    slots.markSlotUsed({ slotInfo: info('fetchBatch'), permit: a });
    expect(slots.tryReserveSlot()).toBeNull();
    const third = reserve(slots);
    expect(slots.inUse).toMatchObject({ reserved: 1, fetches: 1, waiting: 1 });
    slots.releaseSlot({ slotInfo: info('fetchBatch'), permit: a });
    await expect(third).resolves.toBeDefined();
    expect(slots.inUse).toMatchObject({ reserved: 2, fetches: 0, waiting: 0 });
  });

  it('takes one fetch at a time while the network is down, and its share again once it is back', async () => {
    const net = network();
    const slots = new ActivitySlots(100, net);
    const running: SlotPermit[] = [];
    for (let i = 0; i < 5; i++) {
      const p = await reserve(slots);
      slots.markSlotUsed({ slotInfo: info('fetchBatch'), permit: p });
      running.push(p);
    }
    net.set(true);
    // Five fetches were running when it went down: no poll until they are down to none.
    expect(slots.tryReserveSlot()).toBeNull();
    for (const p of running.splice(0, 4)) slots.releaseSlot({ slotInfo: info('fetchBatch'), permit: p });
    expect(slots.tryReserveSlot()).toBeNull();
    const probe = reserve(slots);
    slots.releaseSlot({ slotInfo: info('fetchBatch'), permit: running.pop()! });
    const probePermit = await probe;
    // One poll outstanding (it may bring a fetch): no second one.
    expect(slots.tryReserveSlot()).toBeNull();
    slots.markSlotUsed({ slotInfo: info('fetchBatch'), permit: probePermit });
    const waiting = [reserve(slots), reserve(slots)];
    expect(slots.inUse).toMatchObject({ fetches: 1, waiting: 2 });
    net.set(false);
    await expect(Promise.all(waiting)).resolves.toHaveLength(2);
    expect(slots.inUse).toMatchObject({ reserved: 2, fetches: 1, waiting: 0 });
  });

  it('goes on with bookkeeping activities while the network is down', async () => {
    const net = network();
    const slots = new ActivitySlots(100, net);
    net.set(true);
    const first = await reserve(slots);
    expect(slots.tryReserveSlot()).toBeNull();
    const next = reserve(slots);
    // The poll brought a record write, not a fetch: the next poll may go.
    slots.markSlotUsed({ slotInfo: info('recordFinal'), permit: first });
    const second = await next;
    slots.markSlotUsed({ slotInfo: info('fetchBatch'), permit: second });
    expect(slots.inUse).toMatchObject({ reserved: 0, fetches: 1, others: 1 });
    expect(slots.tryReserveSlot()).toBeNull();
    // A slot released unused (a poll that timed out) frees its reservation.
    slots.releaseSlot({ slotInfo: info('fetchBatch'), permit: second });
    const third = slots.tryReserveSlot()!;
    slots.releaseSlot({ permit: third });
    expect(slots.inUse).toMatchObject({ reserved: 0, fetches: 0, others: 1 });
  });

  it('gives up a waiting reservation when the SDK aborts it, with the signal\'s reason', async () => {
    const slots = new ActivitySlots(1);
    await reserve(slots);
    expect(slots.tryReserveSlot()).toBeNull();
    const abort = new AbortController();
    const waiting = slots.reserveSlot(ctx, abort.signal);
    const reason = new Error('shutting down');
    abort.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(slots.inUse.waiting).toBe(0);
  });
});
