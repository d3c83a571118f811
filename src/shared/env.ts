import { decimal } from './decimal';

/** An integer setting from the environment: `fallback` when unset or empty, an error naming it when out of range. */
export function intFromEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = decimal(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

/**
 * A text setting: `fallback` when unset or blank. An empty value is what an unset variable
 * becomes when passed through (`CRAWL_DATA_DIR=${CRAWL_DATA_DIR}` in a compose file or a unit);
 * taken as given, an empty store or data directory meant the current directory.
 */
export function envText(name: string, fallback: string): string;
export function envText(name: string, fallback?: undefined): string | undefined;
export function envText(name: string, fallback?: string): string | undefined {
  const raw = process.env[name];
  return raw === undefined || raw.trim() === '' ? fallback : raw;
}

/** A yes/no value: `fallback` when unset or blank; true, 1, yes / false, 0, no in any case; anything else throws `bad()`. */
export function readFlag(raw: string | undefined, fallback: boolean, bad: () => Error): boolean {
  const word = (raw ?? '').trim().toLowerCase();
  if (word === '') return fallback;
  if (['true', '1', 'yes'].includes(word)) return true;
  if (['false', '0', 'no'].includes(word)) return false;
  throw bad();
}

/** A yes/no setting (readFlag); anything else is an error naming it. */
export function flagFromEnv(name: string, fallback: boolean): boolean {
  return readFlag(process.env[name], fallback, () => new Error(`${name} must be true, false, 1, 0, yes or no, got ${JSON.stringify(process.env[name])}`));
}
