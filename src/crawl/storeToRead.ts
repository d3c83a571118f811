import fs from 'node:fs';
import { LocalStore, storeFromEnv, type ObjectStore } from '../pipeline/store';
import { crawlOutputsIn } from '../shared/crawlOutputs';

/**
 * The store `export` and `reasons` read. A local store that is not there is an error: it is a
 * typo or a forgotten `--data-dir` (`crawl run --out crawl-out`, then `crawl export` without
 * it), which before exported 0 records with exit code 0. It names the directories here that
 * hold a crawl's records.
 */
export function storeToRead(dataDir: string, cwd = process.cwd(), flag: '--data-dir' | '--out' = '--data-dir'): ObjectStore {
  const store = storeFromEnv(dataDir);
  if (!(store instanceof LocalStore) || fs.existsSync(store.root)) return store;
  const here = crawlOutputsIn(cwd, 'records');
  throw new Error(`there is no ${store.description}: give ${flag} the directory \`crawl run --out\` wrote, or the one the workers use (CRAWL_DATA_DIR)` +
    (here.length ? `; here: ${here.map((d) => `${flag} ${d}`).join(', ')}` : ''));
}
