/**
 * Runs `fn` over the items with at most `limit` calls in flight; rejects with the first error
 * once the calls already started have settled (nothing is left running behind the caller).
 */
export async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const lane = async () => {
    while (!failure && next < items.length) {
      const item = items[next++]!;
      try {
        await fn(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  if (failure) throw failure.error;
}

/**
 * A budget shared by weight (e.g. pixels being decoded): `use(weight, fn)` waits until the weight
 * fits, first come first served. A weight larger than the whole budget runs alone.
 */
export class WeightedBudget {
  private used = 0;
  private readonly waiting: { weight: number; start(): void }[] = [];

  constructor(readonly capacity: number) {}

  get inUse(): number {
    return this.used;
  }

  async use<T>(weight: number, fn: () => Promise<T>): Promise<T> {
    const w = Math.min(Math.max(0, weight), this.capacity);
    if (this.waiting.length > 0 || this.used + w > this.capacity) {
      await new Promise<void>((start) => this.waiting.push({ weight: w, start }));
    } else {
      this.used += w;
    }
    try {
      return await fn();
    } finally {
      this.used -= w;
      this.admit();
    }
  }

  /** In arrival order: a large item at the head is not overtaken by small ones forever. */
  private admit(): void {
    while (this.waiting.length > 0 && this.used + this.waiting[0]!.weight <= this.capacity) {
      const next = this.waiting.shift()!;
      this.used += next.weight;
      next.start();
    }
  }
}

/** Whether `p` fulfils within `ms` (false once they pass); a rejection of `p` is passed on. */
export async function fulfilsWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p.then(() => true), new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), ms); })]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `capacity` slots shared by keys (sources): `use(key, fn)` runs at once while a slot is free;
 * when none is, a freed slot goes to the waiting key with the fewest slots in use (the earliest
 * waiter among equals). First come first served would let one key with slow work (a site of
 * huge images) take every slot and hold up every other key's quick work behind it; this gives
 * each waiting key an equal share, and all of them to a key alone.
 */
export class FairSlots {
  private running = new Map<string, number>();
  private waiting = new Map<string, { seq: number; start(): void }[]>();
  private used = 0;
  private seq = 0;

  constructor(readonly capacity: number) {}

  get inUse(): number {
    return this.used;
  }

  async use<T>(key: string, fn: () => Promise<T>): Promise<T> {
    if (this.used < this.capacity && this.waiting.size === 0) this.take(key);
    else await new Promise<void>((start) => this.queueOf(key).push({ seq: this.seq++, start }));
    try {
      return await fn();
    } finally {
      this.used--;
      const left = this.running.get(key)! - 1;
      if (left === 0) this.running.delete(key);
      else this.running.set(key, left);
      this.admit();
    }
  }

  private take(key: string): void {
    this.used++;
    this.running.set(key, (this.running.get(key) ?? 0) + 1);
  }

  private queueOf(key: string): { seq: number; start(): void }[] {
    let q = this.waiting.get(key);
    if (!q) this.waiting.set(key, q = []);
    return q;
  }

  private admit(): void {
    while (this.used < this.capacity && this.waiting.size > 0) {
      let best: string | undefined;
      for (const [key, q] of this.waiting) {
        if (best === undefined) { best = key; continue; }
        const a = this.running.get(key) ?? 0;
        const b = this.running.get(best) ?? 0;
        if (a < b || (a === b && q[0]!.seq < this.waiting.get(best)![0]!.seq)) best = key;
      }
      const q = this.waiting.get(best!)!;
      const next = q.shift()!;
      if (q.length === 0) this.waiting.delete(best!);
      this.take(best!);
      next.start();
    }
  }
}
