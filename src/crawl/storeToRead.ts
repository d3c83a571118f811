import fs from 'node:fs';
import path from 'node:path';
import { LocalStore, storeFromEnv, type ObjectStore } from '../pipeline/store';
import { crawlOutputsIn } from '../shared/crawlOutputs';

/**
 * The store `export` and `reasons` read. A local store that is not there is an error: it is a
 * typo or a forgotten `--data-dir` (`crawl run --out crawl-out`, then `crawl export` without
 * it), which before exported 0 records with exit code 0. It names the directories here that
 * hold a crawl's records. The directory given may be the store itself (the summary of `crawl run`
 * names it, "the local directory OUT/store"): the error then names the one that holds it.
 */
export function storeToRead(dataDir: string, cwd = process.cwd(), flag: '--data-dir' | '--out' = '--data-dir'): ObjectStore {
  const store = storeFromEnv(dataDir);
  if (!(store instanceof LocalStore) || fs.existsSync(store.root)) return store;
  if (fs.existsSync(path.join(dataDir, 'records'))) {
    throw new Error(`${dataDir} is a store itself (it holds records/): give ${flag} ${path.dirname(dataDir)}, the directory that holds it`);
  }
  const here = crawlOutputsIn(cwd, 'records');
  throw new Error(`there is no ${store.description}: give ${flag} the directory \`crawl run --out\` wrote, or the one the workers use (CRAWL_DATA_DIR)` +
    (here.length ? `; here: ${here.map((d) => `${flag} ${d}`).join(', ')}` : ''));
}

/**
 * storeToRead, and an S3 store asked once whether it can be read: a missing bucket or refused
 * credentials then say what to set (CRAWL_S3_BUCKET, ...), where the first listing said only
 * "The specified bucket does not exist".
 */
export async function readableStore(dataDir: string, cwd = process.cwd(), flag: '--data-dir' | '--out' = '--data-dir'): Promise<ObjectStore> {
  const store = storeToRead(dataDir, cwd, flag);
  if (!(store instanceof LocalStore)) await store.verify?.();
  return store;
}

/**
 * The store of `--out OUT` (a `crawl run --out` directory, as `run` names it at its end) or of
 * `--data-dir D`, for the commands that take either; undefined when neither is given.
 */
export async function storeOfOutOrDataDir(opts: { out?: string; dataDir?: string }): Promise<ObjectStore | undefined> {
  checkOneStore(opts);
  if (opts.out !== undefined) return readableStore(path.resolve(opts.out), process.cwd(), '--out');
  return opts.dataDir !== undefined ? readableStore(opts.dataDir) : undefined;
}

/** `--out` and `--data-dir` both given: an error, checked before anything is read. */
export function checkOneStore(opts: { out?: string; dataDir?: string }): void {
  if (opts.dataDir !== undefined && opts.out !== undefined) throw new Error('--data-dir and --out both name the store: give one (--out for a directory `crawl run --out` wrote)');
}
