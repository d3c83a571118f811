import type { ObjectStore } from '../pipeline/store';
import type { SourceConfig } from '../shared/types';
import { sourceConfigOf } from '../politeness/targetRate';
import { isPlainObject } from '../shared/plainObject';
import type { ThumbnailFormat } from '../pipeline/config';
import { NetworkGuard } from '../pipeline/networkGuard';
import { type Catalog, entryHost } from './catalog';

/**
 * What the crawls into a store were told about their sources and the network (`crawl run`'s
 * catalogue and flags; `crawl start`'s catalogue and ceilings), kept in the store so that `crawl
 * again` asks for the same URLs under the same terms: without it, sources given a catalogue rate
 * were asked again at the default 1/s, and URLs on a network opened with --allow-network were
 * refused.
 */
export interface RunSettings {
  catalog: Catalog;
  allowNetworks: string[];
  maxRate?: number;
  maxRetryAfterMs?: number;
  /**
   * Each image's own bytes are kept (CRAWL_KEEP_ORIGINALS): once a crawl into the store was
   * asked to, later runs and `crawl again` keep them too, so that the store does not hold
   * originals for some of its images and not for others without anyone having said so.
   */
  keepOriginals?: boolean;
  /** Each thumbnail's perceptual hash in its record (CRAWL_PERCEPTUAL_HASH), kept for the same reason. */
  perceptualHash?: boolean;
  /**
   * How thumbnails are made (CRAWL_THUMBNAIL_FORMAT, _MAX_SIDE, _QUALITY), each as a run into the
   * store last gave it: kept for the same reason, so that a store's thumbnails are all alike.
   */
  thumbnails?: ThumbnailSettings;
}

export interface ThumbnailSettings {
  format?: ThumbnailFormat;
  maxSide?: number;
  quality?: number;
}

export const RUN_SETTINGS_KEY = 'work/run-settings.json';

/**
 * Adds a run's settings to those kept in the store: its catalogue entries replace earlier ones of
 * the same sources, its networks join the earlier ones, and a ceiling it gives replaces the one
 * kept (`maxRate: null` removes it: `crawl again --max-rate none`). Returns the settings now kept.
 */
export async function rememberRunSettings(store: ObjectStore, run: Partial<Omit<RunSettings, 'maxRate'>> & { maxRate?: number | null }, warn: (message: string) => void): Promise<RunSettings> {
  const kept: RunSettings = (await readRunSettings(store, warn, 'replaced by this one\'s')) ?? { catalog: new Map(), allowNetworks: [] };
  const given: Catalog = run.catalog ?? new Map();
  // An entry replaces an earlier one of the same source, however either names its host.
  const replaced = new Set([...given.keys()].map(entryHost));
  const merged: RunSettings = {
    catalog: new Map([...[...kept.catalog].filter(([name]) => !replaced.has(entryHost(name))), ...given]),
    allowNetworks: [...new Set([...kept.allowNetworks, ...(run.allowNetworks ?? [])])],
    maxRate: run.maxRate === null ? undefined : run.maxRate ?? kept.maxRate,
    maxRetryAfterMs: run.maxRetryAfterMs ?? kept.maxRetryAfterMs,
    keepOriginals: run.keepOriginals ?? kept.keepOriginals,
    perceptualHash: run.perceptualHash ?? kept.perceptualHash,
    ...(kept.thumbnails || run.thumbnails ? { thumbnails: { ...kept.thumbnails, ...run.thumbnails } } : {}),
  };
  const json = {
    catalog: Object.fromEntries(merged.catalog), allowNetworks: merged.allowNetworks, maxRate: merged.maxRate, maxRetryAfterMs: merged.maxRetryAfterMs,
    keepOriginals: merged.keepOriginals, perceptualHash: merged.perceptualHash, thumbnails: merged.thumbnails,
  };
  await store.put(RUN_SETTINGS_KEY, `${JSON.stringify(json, null, 2)}\n`, 'application/json');
  return merged;
}

/**
 * The settings kept in the store, or undefined when there are none. What makes no sense is said
 * so and not used: asking at the default rate is the polite way to be wrong. (A store that cannot
 * be read fails the command, as it would a moment later.)
 */
export async function readRunSettings(store: ObjectStore, warn: (message: string) => void, then = 'not applied'): Promise<RunSettings | undefined> {
  const body = await store.get(RUN_SETTINGS_KEY);
  if (body === undefined) return undefined;
  let settings: RunSettings;
  try {
    settings = parseRunSettings(JSON.parse(body.toString('utf8')));
  } catch (err) {
    warn(`${RUN_SETTINGS_KEY} in the ${store.description} is not what a run writes (${(err as Error).message}): the earlier runs' settings (catalogue, --allow-network, ceilings, originals, dHash, thumbnails) are ${then}`);
    return undefined;
  }
  // Before session 79 a mistyped address (`999.1.1.1`) was kept as a host name that opened
  // nothing; now the guard refuses it, and kept it would fail every `crawl again` into the store.
  const usable = settings.allowNetworks.filter((entry) => {
    try {
      new NetworkGuard([entry]);
      return true;
    } catch (err) {
      warn(`${RUN_SETTINGS_KEY} in the ${store.description} keeps --allow-network ${JSON.stringify(entry)}, which opened nothing (${(err as Error).message}): left out`);
      return false;
    }
  });
  return { ...settings, allowNetworks: usable };
}

function parseRunSettings(raw: unknown): RunSettings {
  if (!isPlainObject(raw)) throw new Error('not a JSON object');
  const { catalog, allowNetworks, maxRate, maxRetryAfterMs, keepOriginals, perceptualHash, thumbnails } = raw as Record<string, unknown>;
  if (!isPlainObject(catalog)) throw new Error('"catalog" is not an object');
  if (!Array.isArray(allowNetworks) || !allowNetworks.every((n) => typeof n === 'string')) throw new Error('"allowNetworks" is not a list of strings');
  for (const [name, value] of [['maxRate', maxRate], ['maxRetryAfterMs', maxRetryAfterMs]] as const) {
    if (value !== undefined && (typeof value !== 'number' || !(value > 0))) throw new Error(`"${name}" is not a positive number`);
  }
  for (const [name, value] of [['keepOriginals', keepOriginals], ['perceptualHash', perceptualHash]] as const) {
    if (value !== undefined && typeof value !== 'boolean') throw new Error(`"${name}" is not true or false`);
  }
  if (thumbnails !== undefined) parseThumbnailSettings(thumbnails);
  const entries = new Map<string, SourceConfig>();
  for (const [name, config] of Object.entries(catalog as Record<string, unknown>)) {
    if (!isPlainObject(config)) throw new Error(`source ${JSON.stringify(name)} is not an object`);
    const taken = sourceConfigOf(config);
    if ('problem' in taken) throw new Error(`source ${JSON.stringify(name)}: ${taken.problem}`);
    entries.set(name, taken.config);
  }
  return {
    catalog: entries, allowNetworks: allowNetworks as string[], maxRate: maxRate as number | undefined, maxRetryAfterMs: maxRetryAfterMs as number | undefined,
    ...(keepOriginals !== undefined ? { keepOriginals: keepOriginals as boolean } : {}),
    ...(perceptualHash !== undefined ? { perceptualHash: perceptualHash as boolean } : {}),
    ...(thumbnails !== undefined ? { thumbnails: thumbnails as ThumbnailSettings } : {}),
  };
}

/** The same bounds as the environment's (pipeline/config.ts): a kept value a worker would refuse is not applied. */
function parseThumbnailSettings(raw: unknown): void {
  if (!isPlainObject(raw)) throw new Error('"thumbnails" is not an object');
  const { format, maxSide, quality, ...rest } = raw as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length) throw new Error(`"thumbnails" has ${unknown.map((k) => JSON.stringify(k)).join(', ')}, which no run writes`);
  if (format !== undefined && format !== 'jpeg' && format !== 'webp') throw new Error('"thumbnails.format" is not jpeg or webp');
  for (const [name, value, min, max] of [['maxSide', maxSide, 16, 4_096], ['quality', quality, 1, 100]] as const) {
    if (value !== undefined && !(Number.isInteger(value) && (value as number) >= min && (value as number) <= max)) throw new Error(`"thumbnails.${name}" is not a whole number from ${min} to ${max}`);
  }
}
