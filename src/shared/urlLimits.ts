/**
 * The longest URL crawled, from a manifest or a redirect. A batch's 500 URLs travel in its grants
 * and their results (a redirect part-way through, as the hop a URL is handed back with), which
 * Temporal refuses over 2 MB: 3,000-character signed URLs came to 1.5 MB. Signed CDN and S3
 * links run to 1,000-2,500; the sitemaps protocol allows 2,048.
 */
export const MAX_URL_CHARS = 3_500;

/** A URL's length as the server gets it: its fragment is never sent. */
export function sentChars(u: URL): number {
  return u.href.length - u.hash.length;
}
