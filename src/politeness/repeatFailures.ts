import type { RequestOutcome } from '../shared/types';
import { isThrottle } from './classify';

/**
 * Which failures say something new of a site. A URL's first failure of its own does; its
 * failing again (the same broken image asked for its second and third time) does not, and the
 * breaker leaves such repeats out (healthSample). A 429/503 is the site's load rather than the
 * URL's fault, and a try the worker never sent is no answer at all: neither makes the URL's next
 * failure a repeat.
 */
export class FailedUrls {
  private readonly failed = new Set<number>();

  /** Whether URL `index` has failed on its own: a failure of its next try is a repeat. */
  has(index: number): boolean {
    return this.failed.has(index);
  }

  /** Takes URL `index`'s latest outcome; true when it is a failure to leave out as a repeat. */
  isRepeat(index: number, o: Pick<RequestOutcome, 'cls' | 'sent' | 'status'>): boolean {
    if (!o.sent || o.cls !== 'error') return false;
    const repeat = this.failed.has(index);
    if (!isThrottle(o.status)) this.failed.add(index);
    return repeat;
  }
}
