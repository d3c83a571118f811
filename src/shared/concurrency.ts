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
