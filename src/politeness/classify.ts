import type { OutcomeClass } from '../shared/types';

/** What an HTTP status means for the URL and for the site's health. */
export type StatusMeaning = 'ok' | 'linkrot' | 'site-error' | 'url-error';

export function classifyStatus(status: number): StatusMeaning {
  if (status >= 200 && status < 300) return 'ok';
  if (status === 404 || status === 410) return 'linkrot';
  // 403 and 429 usually mean "you are too much for us"; 5xx means the site is struggling. A
  // 408 is a timeout at the site (it gave up waiting for a request it had in full, or closed
  // the connection as it came): asked again later, as a timeout of ours would be, not the
  // URL's final answer.
  if (status === 403 || status === 408 || status === 429 || status >= 500) return 'site-error';
  return 'url-error';
}

const STATUS_NOTES: Record<number, string> = {
  206: 'part of the image only, though no range was asked for',
  304: 'Not Modified, though nothing conditional was asked',
};

/** A record's reason for a status that brought no image: the code, and what it means where the code alone misleads. */
export function statusReason(status: number): string {
  // A redirect with a Location is followed: one that reaches a record has none.
  const note = STATUS_NOTES[status] ?? (status >= 300 && status < 400 ? 'a redirect without a Location header' : undefined);
  return note ? `http ${status}: ${note}` : `http ${status}`;
}

/**
 * Answers that ask us to slow down, not just report a failure: 429 and 503, and the two that
 * say the same in other words, 509 (the site's bandwidth allowance is spent, as cPanel and
 * Apache hosts answer) and 529 (the site is overloaded). Sending on past them, as past a 500,
 * spent what little the site had left on answering us no.
 */
const THROTTLE_STATUSES: ReadonlySet<number> = new Set([429, 503, 509, 529]);

export function isThrottle(status: number | undefined): boolean {
  return status !== undefined && THROTTLE_STATUSES.has(status);
}

/**
 * Whether an outcome counts in the breaker's sample, and as an error there. A URL failing again
 * (`repeat`) is no sample of the share: a site's few broken images, tried three times each after
 * the rest of their chunk, came in runs that made 10% of a minute's requests and cooled a healthy
 * site four times. Its first failure counted already; a retry that succeeds counts as ok.
 */
export function healthSample(cls: OutcomeClass, sent: boolean, repeat = false): 'error' | 'repeat' | 'ok' | 'none' {
  if (!sent) return 'none';
  if (cls === 'error') return repeat ? 'repeat' : 'error';
  return 'ok';
}
