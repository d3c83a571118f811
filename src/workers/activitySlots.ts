import type { ActivitySlotInfo, CustomSlotSupplier, SlotMarkUsedContext, SlotPermit, SlotReleaseContext } from '@temporalio/worker';
import type { WorkerNetwork } from '../pipeline/workerOutage';

/**
 * The worker's activity slots, held back while its own network is down.
 *
 * A worker takes an activity task only after reserving a slot, so the slots decide what it
 * polls for. A worker whose network is down, among workers whose network is up, went on taking
 * its share of the grants: their requests could not leave, their slots passed unsent, and their
 * sources ran at what the other workers took (measured: two workers, one cut off for 4 minutes,
 * 0.44 req/s per host of 1/s meanwhile). While the network is down (WorkerOutageWatch), this
 * worker takes one fetch activity at a time: the other workers' pollers get the grants, and the
 * one it has still sends in its slots, so the first answer tells it the network is back and it
 * takes its share again at once. Bookkeeping activities (records, chunk files) go on as before:
 * they need the store, not the sites.
 */

/** The activity that sends requests to sites. */
export const FETCH_ACTIVITY = 'fetchBatch';
/** Fetch activities a worker whose network is down runs at once: its probe of the network. */
export const FETCHES_WHILE_DOWN = 1;

interface Waiter {
  resolve: (permit: SlotPermit) => void;
}

type Use = 'fetch' | 'other';

export class ActivitySlots implements CustomSlotSupplier<ActivitySlotInfo> {
  readonly type = 'custom';
  /** Slots reserved for a poll that has not brought a task yet: each may bring a fetch. */
  private reserved = 0;
  private fetches = 0;
  private others = 0;
  private readonly waiters: Waiter[] = [];
  /** What each permit in use was used for (a permit is an object the SDK hands back). */
  private readonly uses = new WeakMap<SlotPermit, Use>();

  constructor(private readonly max: number, private readonly network?: Pick<WorkerNetwork, 'down' | 'listen'>) {
    network?.listen(() => this.wake());
  }

  /** Slots reserved or in use (for tests and logs). */
  get inUse(): { reserved: number; fetches: number; others: number; waiting: number } {
    return { reserved: this.reserved, fetches: this.fetches, others: this.others, waiting: this.waiters.length };
  }

  reserveSlot(_ctx: unknown, abortSignal: AbortSignal): Promise<SlotPermit> {
    const permit = this.tryReserveSlot();
    if (permit) return Promise.resolve(permit);
    return new Promise<SlotPermit>((resolve, reject) => {
      if (abortSignal.aborted) return reject(abortSignal.reason);
      const waiter: Waiter = {
        resolve: (p) => {
          abortSignal.removeEventListener('abort', onAbort);
          resolve(p);
        },
      };
      // The SDK gives up a reservation it no longer needs (shutdown): it must be rejected with
      // the signal's reason, or the worker waits for it.
      const onAbort = () => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
        reject(abortSignal.reason);
      };
      abortSignal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  tryReserveSlot(): SlotPermit | null {
    if (!this.free()) return null;
    this.reserved += 1;
    return {};
  }

  markSlotUsed(ctx: SlotMarkUsedContext<ActivitySlotInfo>): void {
    const use: Use = ctx.slotInfo.activityType === FETCH_ACTIVITY ? 'fetch' : 'other';
    this.uses.set(ctx.permit, use);
    this.reserved = Math.max(0, this.reserved - 1);
    if (use === 'fetch') this.fetches += 1;
    else this.others += 1;
    // A slot that brought bookkeeping frees the one a down worker keeps for a fetch.
    this.wake();
  }

  releaseSlot(ctx: SlotReleaseContext<ActivitySlotInfo>): void {
    const use = this.uses.get(ctx.permit);
    this.uses.delete(ctx.permit);
    if (use === 'fetch') this.fetches = Math.max(0, this.fetches - 1);
    else if (use === 'other') this.others = Math.max(0, this.others - 1);
    else this.reserved = Math.max(0, this.reserved - 1);
    this.wake();
  }

  private free(): boolean {
    if (this.reserved + this.fetches + this.others >= this.max) return false;
    // A reserved slot may bring a fetch: while down, at most FETCHES_WHILE_DOWN of both.
    return !this.network?.down || this.reserved + this.fetches < FETCHES_WHILE_DOWN;
  }

  private wake(): void {
    while (this.waiters.length > 0 && this.free()) {
      this.reserved += 1;
      this.waiters.shift()!.resolve({});
    }
  }
}
