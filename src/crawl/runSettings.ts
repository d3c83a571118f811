import fs from 'node:fs';
import path from 'node:path';
import type { SourceConfig } from '../shared/types';
import { invalidSourceConfig } from '../politeness/targetRate';
import { isPlainObject } from '../shared/plainObject';
import { replaceFile } from '../shared/replaceFile';
import type { Catalog } from './catalog';

/**
 * What the runs into an output directory were told about their sources and the network, kept
 * beside their store so that `crawl again` asks for the same URLs under the same terms: without
 * it, sources given a catalogue rate were asked again at the default 1/s, and URLs on a network
 * opened with --allow-network were refused.
 */
export interface RunSettings {
  catalog: Catalog;
  allowNetworks: string[];
  maxRate?: number;
  maxRetryAfterMs?: number;
}

export const RUN_SETTINGS_FILE = 'run-settings.json';

/**
 * Adds a run's settings to those kept in `outDir`: its catalogue entries replace earlier ones of
 * the same sources, its networks join the earlier ones, and a ceiling it gives replaces the one kept.
 */
export async function rememberRunSettings(outDir: string, run: Partial<RunSettings>, warn: (message: string) => void): Promise<void> {
  const kept: RunSettings = readRunSettings(outDir, warn) ?? { catalog: new Map(), allowNetworks: [] };
  const merged: RunSettings = {
    catalog: new Map([...kept.catalog, ...(run.catalog ?? [])]),
    allowNetworks: [...new Set([...kept.allowNetworks, ...(run.allowNetworks ?? [])])],
    maxRate: run.maxRate ?? kept.maxRate,
    maxRetryAfterMs: run.maxRetryAfterMs ?? kept.maxRetryAfterMs,
  };
  const json = { catalog: Object.fromEntries(merged.catalog), allowNetworks: merged.allowNetworks, maxRate: merged.maxRate, maxRetryAfterMs: merged.maxRetryAfterMs };
  await replaceFile(path.join(outDir, RUN_SETTINGS_FILE), async (write) => write(`${JSON.stringify(json, null, 2)}\n`));
}

/**
 * The settings kept in `outDir`, or undefined when there are none. A file that cannot be read or
 * makes no sense is said so and not used: asking at the default rate is the polite way to be wrong.
 */
export function readRunSettings(outDir: string, warn: (message: string) => void): RunSettings | undefined {
  const file = path.join(outDir, RUN_SETTINGS_FILE);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    warn(`cannot read ${file} (${(err as Error).message}): the earlier runs' catalogue and --allow-network are not applied`);
    return undefined;
  }
  try {
    return parseRunSettings(JSON.parse(text));
  } catch (err) {
    warn(`${file} is not what a run writes (${(err as Error).message}): the earlier runs' catalogue and --allow-network are not applied`);
    return undefined;
  }
}

function parseRunSettings(raw: unknown): RunSettings {
  if (!isPlainObject(raw)) throw new Error('not a JSON object');
  const { catalog, allowNetworks, maxRate, maxRetryAfterMs } = raw as Record<string, unknown>;
  if (!isPlainObject(catalog)) throw new Error('"catalog" is not an object');
  if (!Array.isArray(allowNetworks) || !allowNetworks.every((n) => typeof n === 'string')) throw new Error('"allowNetworks" is not a list of strings');
  for (const [name, value] of [['maxRate', maxRate], ['maxRetryAfterMs', maxRetryAfterMs]] as const) {
    if (value !== undefined && (typeof value !== 'number' || !(value > 0))) throw new Error(`"${name}" is not a positive number`);
  }
  const entries = new Map<string, SourceConfig>();
  for (const [name, config] of Object.entries(catalog as Record<string, unknown>)) {
    if (!isPlainObject(config)) throw new Error(`source ${JSON.stringify(name)} is not an object`);
    const { imageCount, rate, burst } = config as Record<string, unknown>;
    const bad = invalidSourceConfig({ imageCount, rate, burst });
    if (bad) throw new Error(`source ${JSON.stringify(name)}: ${bad}`);
    entries.set(name, { imageCount: imageCount as number | undefined, rate: rate as number | undefined, burst: burst as number | undefined });
  }
  return { catalog: entries, allowNetworks: allowNetworks as string[], maxRate: maxRate as number | undefined, maxRetryAfterMs: maxRetryAfterMs as number | undefined };
}
