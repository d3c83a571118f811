import type { RequestOutcome } from '../shared/types';

/**
 * Pages where images were asked for. A firewall that turns a crawler away with 403 or 429 is
 * heard by the breaker and the back-off; one that serves its block or login page with 200 (an
 * HTML "verify you are human") fails nothing, and every URL after it was asked for and recorded
 * as a content error, its image never fetched (measured: 600 URLs at 20/s from a site that began
 * blocking after 60: 540 block pages at full rate, `crawl run` exiting 0 without a word). Page
 * URLs given for image URLs look the same, as do a wall that answers with nothing (an empty 200)
 * and a cookie wall a crawler never passes (endless redirects: 1,801 requests for 300 URLs at one
 * site, each recorded as a content error), and a login wall or a geo-block by status (401, 451, a
 * firewall's 400: any 4xx but link rot's 404 and 410 and the load signals 403 and 429). A run this
 * long of such answers with no image between them
 * halts the source: an operator looks (`crawl reasons`) and resumes or stops it, and the rest of
 * its URLs are kept. Fifty pages in a row by chance, at a site whose missing images answer with a
 * page, takes a gallery of fifty gone at once; the operator resumes that one.
 */
export const PAGES_FOR_HALT = 50;

/**
 * This many pages in a row inside one grant and its activity stops sending, as it does for a
 * burst of errors: the monitor's count is heard only when a grant reports, and at 20/s the grants
 * already out took 132 pages before the halt (50 with this).
 */
export const PAGE_BURST = 10;

/** Pages since the last image, after one more final outcome. Other outcomes (404s, errors) leave it. */
export function pagesSinceImage(run: number, o: Pick<RequestOutcome, 'cls' | 'final' | 'page'>): number {
  if (!o.final) return run;
  if (o.cls === 'done') return 0;
  return o.cls === 'content' && o.page ? run + 1 : run;
}

/**
 * The halt's reason: what the answers likely are, told by whether any image came before them,
 * and the last one's own reason (a page, an empty body or endless redirects, for `crawl reasons`).
 */
export function pagesHaltReason(imagesBefore: number, last?: string): string {
  const what = `not images but web pages (HTML, JSON or text), empty bodies, endless redirects or 4xx refusals${last ? ` (the last: ${last})` : ''}`;
  return imagesBefore > 0
    ? `its last ${PAGES_FOR_HALT} answers were ${what}, after ${imagesBefore} images: likely a block, login or cookie wall answering in their place`
    : `its first ${PAGES_FOR_HALT} answers were ${what}: likely page URLs given for image URLs, or a block, login or cookie wall answering in their place`;
}
