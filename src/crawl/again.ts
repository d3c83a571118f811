import fs from 'node:fs';
import path from 'node:path';
import type { ObjectStore } from '../pipeline/store';
import { commandGuard } from '../pipeline/config';
import { type AgainKind, writeAgainManifest } from './askAgain';
import { type Catalog, entriesFor, readCatalog } from './catalog';
import { runCrawl, type RunResult } from './run';
import { shellWord } from '../shared/shellWord';
import { envText } from '../shared/env';
import { readRunSettings, rememberRunSettings, RUN_SETTINGS_KEY } from './runSettings';

export interface AgainOptions {
  outDir: string;
  store: ObjectStore;
  kinds: ReadonlySet<AgainKind>;
  sources: readonly string[];
  catalog?: string;
  allowNetworks: string[];
  /** null: `--max-rate none`, the ceiling kept from earlier runs is lifted (and no longer kept). */
  maxRate?: number | null;
}

/**
 * `crawl again`: the URLs to ask for again as a new manifest in the output directory, crawled as
 * `crawl run` crawls one, under the settings the crawls into the store were given (runSettings);
 * a source an earlier run left halted is resumed. A stopped crawl's unfinished chunks hold their
 * URLs, walled ones too, and the start for the source takes them up, skipping what they
 * recorded: once this run has finished them, the URLs they held are asked for in a second round.
 */
export async function askAgain(opts: AgainOptions, out: NodeJS.WriteStream = process.stdout): Promise<Pick<RunResult, 'exitCode' | 'exitNow'>> {
  let result: RunResult | undefined;
  // The operator's own typo is refused before anything is read or written (a kept one is left out).
  commandGuard(opts.allowNetworks);
  const warn = (m: string) => process.stderr.write(`crawl: ${m}\n`);
  const kept = await readRunSettings(opts.store, warn);
  const givenCatalog = opts.catalog !== undefined ? await readCatalog(opts.catalog) : undefined;
  const catalog: Catalog = givenCatalog ?? kept?.catalog ?? new Map();
  const allowNetworks = [...new Set([...(kept?.allowNetworks ?? []), ...opts.allowNetworks])];
  const maxRate = opts.maxRate === null ? undefined : opts.maxRate ?? kept?.maxRate;
  if (opts.maxRate === null && kept?.maxRate !== undefined) {
    // Lifted for later runs too: each run's settings merge over the kept ones, and a run without
    // a ceiling leaves the kept one in place.
    await rememberRunSettings(opts.store, { maxRate: null }, warn);
    out.write(`--max-rate none: the ceiling of ${kept.maxRate}/s the earlier crawls were given is lifted\n`);
  }
  for (let round = 1; round <= 2; round++) {
    const asked = new Date().toISOString();
    const file = path.join(opts.outDir, `again-${asked.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}.ndjson`);
    const again = await writeAgainManifest(opts.store, file, opts.kinds, opts.sources, asked);
    if (round === 1) for (const s of again.sourcesWithoutRecords) process.stderr.write(`crawl: no records for source "${s}" in the ${opts.store.description} (see \`crawl status\`)\n`);
    if (again.urls === 0) {
      fs.rmSync(file, { force: true });
      if (result) return result;
      const what = opts.kinds.has('failed') ? 'a wall\'s answer or a failure' : 'a wall\'s answer (--failed adds the URLs that used up their tries)';
      out.write(`nothing to ask again: none of the ${again.records} record(s) in the ${opts.store.description} is ${what}\n`);
      return { exitCode: again.sourcesWithoutRecords.length ? 1 : 0 };
    }
    const per = [...again.bySource].sort(([a], [b]) => a.localeCompare(b))
      .map(([source, n]) => `${source}: ${[n.walled ? `${n.walled} walled` : '', n.failed ? `${n.failed} failed` : ''].filter(Boolean).join(', ')}`);
    out.write(`asking again for ${again.urls} URL(s), listed in ${file}: ${per.join('; ')}\n`);
    // Only the sources asked for: the others' entries would each be warned of as matching none.
    const askedCatalog = entriesFor(catalog, again.bySource);
    if (round === 1 && kept) {
      const terms = keptTerms(kept, askedCatalog, givenCatalog !== undefined, opts.maxRate !== undefined);
      if (terms) out.write(`as the earlier crawls into the ${opts.store.description} were told (${RUN_SETTINGS_KEY}): ${terms}\n`);
    }
    result = await runCrawl({ manifest: file, catalog: askedCatalog, outDir: opts.outDir, allowNetworks, maxRate, maxRetryAfterMs: kept?.maxRetryAfterMs, stream: out, againHint: 'unless-held',
      // Asking a halted source again is the operator's word that the site lets the crawler
      // through: a monitor left halted would keep the URLs, and the run would only report the halt.
      halted: 'resume',
      haltedNext: (source) => `once the site lets the crawler through, \`crawl again ${shellWord(source)} --out ${shellWord(opts.outDir)}\` resumes it and asks again; ` +
        `\`crawl run ${shellWord(file)} --out ${shellWord(opts.outDir)} --stop-halted\` ends it for good` });
    if (result.exitNow || result.exitCode !== 0 || !result.queuedElsewhere) return result;
    if (round === 1) out.write(`${result.queuedElsewhere} of them were held by an earlier crawl's unfinished chunks, which this run has finished: asking again for what is still owed\n`);
  }
  return result!;
}

/** The kept settings this run applies, in words, or undefined when it applies none. */
function keptTerms(kept: { allowNetworks: string[]; maxRate?: number; maxRetryAfterMs?: number }, asked: Catalog, catalogGiven: boolean, maxRateGiven: boolean): string | undefined {
  const rates = catalogGiven ? [] : [...asked].flatMap(([name, c]) => {
    const said = [c.rate !== undefined ? `rate ${c.rate}/s` : '', c.burst !== undefined ? `burst ${c.burst}` : '', c.imageCount !== undefined ? `${c.imageCount} images` : '',
      c.maxConnections !== undefined ? `${c.maxConnections} open at once` : ''].filter(Boolean);
    return said.length ? [`${name}: ${said.join(', ')}`] : [];
  });
  return [
    ...rates,
    // With TEMPORAL_ADDRESS the workers are the operator's, and open what their own flags say.
    ...(envText('TEMPORAL_ADDRESS') ? [] : kept.allowNetworks.map((n) => `--allow-network ${n}`)),
    !maxRateGiven && kept.maxRate !== undefined ? `--max-rate ${kept.maxRate}` : '',
    kept.maxRetryAfterMs !== undefined ? `--max-retry-after ${kept.maxRetryAfterMs / 1000}` : '',
  ].filter(Boolean).join('; ') || undefined;
}
