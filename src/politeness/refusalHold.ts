// The rule for a site that refuses (503, 429) a request sent while others were open, shared by
// the worker that holds it (pipeline/siteDownloads) and the monitor's note that tells of it.

/**
 * How long a site that refused a request while others were open is held below that number: long
 * enough that the monitor's back-off and ramp (a minute or two) end under it, short enough that a
 * site whose limit was its load of the moment, or a rate limit's, gets more again.
 */
export const REFUSED_HOLD_MS = 10 * 60_000;

/** A refusal with fewer open (itself included) says nothing of a limit on requests open at once. */
export const REFUSED_MIN_OPEN = 3;
