/**
 * How many URLs a batch puts into a grant of `slots` request slots. One per slot, unless a share
 * (`decidedShare`) of its last grant's URLs was settled without a request (robots.txt disallowed them, their address is
 * refused): those take no slot, so the grant gets as many more as that share predicts, and the
 * slots still go to requests. At a source whose robots.txt disallows everything, each grant
 * takes the whole rest of its chunk instead of one URL per slot of a window.
 */
export const MAX_EXTRA_ITEMS = 1_000;

export function grantItemCount(slots: number, pending: number, decidedShare?: number): number {
  if (!decidedShare || decidedShare <= 0) return Math.min(slots, pending);
  const share = Math.min(1, decidedShare);
  const extra = share >= 0.95 ? MAX_EXTRA_ITEMS : Math.min(MAX_EXTRA_ITEMS, Math.ceil((slots * share) / (1 - share)));
  return Math.min(pending, slots + extra);
}

/**
 * Slots a batch holding `wanted` URLs needs when a share of URLs is settled without a request:
 * the monitor plans by it, so one window's slots reach several batches of a disallowing site
 * instead of each batch taking a whole window for a request or two. At least one slot: a batch
 * gets its URLs only with a grant.
 */
export function slotsNeeded(wanted: number, decidedShare: number | undefined): number {
  if (wanted <= 0 || !decidedShare) return wanted;
  // (the epsilon: 500 x (1 - 0.99) is 5.000000000000004 in floating point)
  return Math.max(1, Math.ceil(wanted * (1 - Math.min(decidedShare, 0.99)) - 1e-9));
}
