import path from 'node:path';
import { shellWord } from '../shared/shellWord';
import type { FailureTally } from './failureTally';

/** Addresses named in the command itself; past this many the operator picks from the records. */
const MAX_ADDRESSES_SHOWN = 5;
/** Sources named in the command itself. */
const MAX_SOURCES_SHOWN = 5;

/**
 * How to ask again for what a wall answered and what failed, when there is any, at the end of a
 * crawl. URLs the network guard refused are asked again in vain until their addresses are
 * opened: `crawl again --failed` alone recorded every one of them as refused a second time. The
 * addresses are named, not their ranges or host names: opening a host would let through whatever
 * its DNS answers next, which is what the guard is there to stop.
 * `ownWorker`: the run's own worker does the fetching; otherwise the operator's workers hold the
 * guard, and an --allow-network given to `crawl again` opens nothing for them.
 */
export function againNote(tally: Pick<FailureTally, 'again' | 'guardRefused' | 'otherSources' | 'only'>, outDir: string, ownWorker: boolean): string | undefined {
  const { walled, failed } = tally.again;
  if (!walled && !failed) return undefined;
  // `crawl again` without sources asks for the whole store's: with other crawls' URLs in it, the
  // run's own sources are named while they are few (past that, it is the operator's choice).
  const sources = tally.otherSources > 0 && tally.only && tally.only.size <= MAX_SOURCES_SHOWN ? [...tally.only].sort() : [];
  const again = ['crawl again', ...sources.map(shellWord)].join(' ');
  const out = shellWord(path.resolve(outDir));
  const addresses = [...tally.guardRefused.byAddress.keys()];
  const named = tally.guardRefused.urls > 0 && addresses.length <= MAX_ADDRESSES_SHOWN;
  const open = named ? addresses.map((a) => `--allow-network ${shellWord(a)}`).join(' ') : '';
  let failedPart = '';
  if (failed) {
    const guard = tally.guardRefused.urls;
    const command = `${again} --failed${named && ownWorker ? ` ${open}` : ''} --out ${out}`;
    failedPart = `for the ${failed} URL(s) that failed or were refused${guard ? ` (${guardNote(guard, addresses.length, named ? open : undefined, ownWorker)})` : ''}: \`${command}\``;
  }
  const parts = [
    walled ? `for the ${walled} URL(s) a wall answered (pages, empty bodies, endless redirects, 4xx refusals), once the site lets the crawler through: \`${again} --out ${out}\`` : '',
    failedPart,
  ].filter(Boolean);
  return `to ask again ${parts.join('; ')}`;
}

/** What opens the addresses behind `urls` guard refusals: `open`, the options when few enough to name. */
function guardNote(urls: number, addresses: number, open: string | undefined, ownWorker: boolean): string {
  const whose = ownWorker ? 'the network guard' : 'the network guard of this crawl\'s workers';
  if (open === undefined) {
    const how = ownWorker ? 'add an --allow-network for each one you trust' : 'restart those workers with an --allow-network for each one you trust first';
    return `${whose} refused ${urls} of them, at ${addresses >= 100 ? '100 or more' : addresses} addresses, each named in its records: ${how}`;
  }
  return ownWorker
    ? `${whose} refused ${urls} of them: the --allow-network ${addresses > 1 ? 'options open the addresses' : 'option opens the address'} they resolved to; leave out any you do not trust`
    : `${whose} refused ${urls} of them: restart those workers with ${open} first, leaving out any you do not trust`;
}
