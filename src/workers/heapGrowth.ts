import v8 from 'node:v8';
import { intFromEnv } from '../shared/env';

/**
 * Lets V8's old generation grow to (1 + percent/100) times its live size before the next full
 * (mark-compact) collection, instead of V8's own factor (about 2 for a heap this small).
 *
 * Why: V8 counts memory allocated outside its heap since the last full collection (every
 * downloaded body and its socket chunks, every thumbnail sharp returns: ~0.4 MB per image)
 * against the old generation's free room. In a worker with a ~25-60 MB live heap that room is
 * used up every ~50 images, although those buffers die young; each full collection then costs
 * ~40 ms of CPU. Measured at 100 images/s with image work stubbed out (bench/RESULTS.md, session
 * 6): 28 full collections in 12 s and 3.9 ms of CPU per image with V8's factor, 2 and 2.9 ms at
 * 200%. The price is memory: the heap may hold up to three times its live size in garbage.
 *
 * The factor is read by V8 each time it sets the next limit, so setting it after start-up
 * takes effect from the next collection on.
 */
export function setHeapGrowth(percent: number): void {
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}

/** CRAWL_HEAP_GROWING_PERCENT: the percentage above (default 200; 0 leaves V8's own factor). */
export function heapGrowthFromEnv(): number {
  return intFromEnv('CRAWL_HEAP_GROWING_PERCENT', 200, 0, 1000);
}
