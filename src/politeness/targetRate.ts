import type { SourceConfig } from '../shared/types';

/** A source's target rate from its size, an explicit override and a global ceiling. */

export const SMALL_SOURCE_IMAGES = 5_000;
export const LARGE_SOURCE_IMAGES = 500_000_000;
export const SMALL_SOURCE_RATE = 1;
export const LARGE_SOURCE_RATE = 200;

/** Linear between 1 req/s at <= 5,000 images and 200 req/s at >= 500 million. */
export function rateFromSize(imageCount: number): number {
  if (!(imageCount > SMALL_SOURCE_IMAGES)) return SMALL_SOURCE_RATE;
  if (imageCount >= LARGE_SOURCE_IMAGES) return LARGE_SOURCE_RATE;
  const fraction = (imageCount - SMALL_SOURCE_IMAGES) / (LARGE_SOURCE_IMAGES - SMALL_SOURCE_IMAGES);
  return SMALL_SOURCE_RATE + fraction * (LARGE_SOURCE_RATE - SMALL_SOURCE_RATE);
}

export interface TargetRateInput {
  imageCount?: number;
  explicitRate?: number;
  globalCeiling?: number;
}

export function targetRate({ imageCount, explicitRate, globalCeiling }: TargetRateInput): number {
  const base = explicitRate ?? rateFromSize(imageCount ?? 0);
  return globalCeiling !== undefined ? Math.min(base, globalCeiling) : base;
}

/** Returns a message when `rate` is not a usable requests-per-second value, else undefined. */
export function invalidRate(rate: unknown): string | undefined {
  if (typeof rate !== 'number' || !Number.isFinite(rate)) return 'rate must be a finite number of requests per second';
  if (rate <= 0) return 'rate must be greater than 0 requests per second';
  if (rate > 10_000) return 'rate must be at most 10000 requests per second';
  return undefined;
}

export function invalidBurst(burst: unknown): string | undefined {
  if (typeof burst !== 'number' || !Number.isInteger(burst) || burst < 0 || burst > 1000) {
    return 'burst must be a whole number from 0 to 1000';
  }
  return undefined;
}

/** The most a source's maxConnections may be: CRAWL_MAX_CONNECTIONS_PER_SITE's own bound. */
export const MAX_CONNECTIONS_LIMIT = 4_096;

export function invalidMaxConnections(n: unknown): string | undefined {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_CONNECTIONS_LIMIT) {
    return `maxConnections must be a whole number of requests open at once from 1 to ${MAX_CONNECTIONS_LIMIT}`;
  }
  return undefined;
}

/** The fields of a source's configuration (a catalogue entry, a monitor's start input). */
export const SOURCE_CONFIG_FIELDS = ['imageCount', 'rate', 'burst', 'maxConnections'] as const;

/** A source's configuration from an entry written by hand or kept (its other fields aside), or what is wrong with it. */
export function sourceConfigOf(raw: Record<string, unknown>): { config: SourceConfig } | { problem: string } {
  const { imageCount, rate, burst, maxConnections } = raw;
  const problem = invalidSourceConfig({ imageCount, rate, burst, maxConnections });
  if (problem) return { problem };
  const config: SourceConfig = { imageCount: imageCount as number | undefined, rate: rate as number | undefined, burst: burst as number | undefined };
  return { config: maxConnections !== undefined ? { ...config, maxConnections: maxConnections as number } : config };
}

/** Returns a message naming the first unusable value of a source's configuration, else undefined. */
export function invalidSourceConfig(cfg: { imageCount?: unknown; rate?: unknown; burst?: unknown; maxConnections?: unknown }): string | undefined {
  const { imageCount, rate, burst, maxConnections } = cfg;
  if (imageCount !== undefined && (typeof imageCount !== 'number' || !Number.isInteger(imageCount) || imageCount < 0)) return 'imageCount must be a whole number >= 0';
  if (rate !== undefined && invalidRate(rate)) return invalidRate(rate);
  if (burst !== undefined && invalidBurst(burst)) return invalidBurst(burst);
  if (maxConnections !== undefined) return invalidMaxConnections(maxConnections);
  return undefined;
}
