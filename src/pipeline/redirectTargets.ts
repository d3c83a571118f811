import { setBounded } from '../shared/boundedMap';

/**
 * Images that many URLs redirect to. A shop's missing product images, a site's hotlink
 * protection, an image service's "not found" all send each such URL on to one and the same
 * picture (`/images/no-image.png`); each URL then cost two requests, its redirect and that
 * picture, downloaded again and again. The picture's result is kept here for a while, and a
 * redirect to it ends with it at once: one request per URL (its redirect), the picture once.
 */
export const TARGET_TTL_MS = 10 * 60_000;

/** Targets kept at most (a few KB each): the oldest go first. */
const MAX_TARGETS = 1_000;

export interface TargetResult {
  /** The record's analysis fields and thumbnail key, as the first URL that reached the target got them. */
  record: Record<string, unknown>;
  status?: number;
  sha?: string;
}

export class RedirectTargets {
  private readonly kept = new Map<string, TargetResult & { atMs: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** A redirect target's image, fetched and stored. */
  remember(url: string, result: TargetResult): void {
    setBounded(this.kept, url, { ...result, atMs: this.now() }, MAX_TARGETS);
  }

  /** The target's image when it was fetched within TARGET_TTL_MS. */
  get(url: string): TargetResult | undefined {
    const hit = this.kept.get(url);
    if (!hit) return undefined;
    if (this.now() - hit.atMs > TARGET_TTL_MS) {
      this.kept.delete(url);
      return undefined;
    }
    return hit;
  }
}
