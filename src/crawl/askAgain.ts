import path from 'node:path';
import type { ObjectStore } from '../pipeline/store';
import { exportRecords } from './exportRecords';
import { notDoneRecords } from './recordLines';
import { replaceFile } from '../shared/replaceFile';
import { isExclusionReason } from '../pipeline/excludedHosts';

/**
 * Which URLs to ask for again, from what the store's records say of each (its done or else
 * latest record: see OneRecordPerUrl), written as a manifest that `crawl run` crawls like any
 * other, into the same store. Done and link rot are answers; robots.txt's word is the site's.
 * - `walled`: answers of the kind that halts a source (pageRun.ts): a page, an empty body,
 *   endless redirects or a 4xx refusal where an image was asked for. Once the site lets the
 *   crawler through, these are the URLs it still owes.
 * - `failed`: URLs that used up their tries (timeouts, 5xx, a robots.txt that could not be read),
 *   and those the network guard refused (asked again once --allow-network opens their range;
 *   a refusal sends nothing to the site). Not those of hosts CRAWL_EXCLUDE_HOSTS excluded.
 */
export type AgainKind = 'walled' | 'failed';

/** A record's reason for the answers pageRun.ts counts, as imagePipeline.ts and analyse.ts word them. */
export const WALL_REASON = /^not an image: (an HTML page|JSON|text|empty body)|^more than \d+ redirects|^redirect loop|^http 4\d\d\b/;

export interface AgainSummary {
  urls: number;
  bySource: Map<string, { walled: number; failed: number }>;
  /** Records read (one per URL of a source). */
  records: number;
  sourcesWithoutRecords: string[];
}

export function againKind(r: { outcome?: unknown; reason?: unknown }): AgainKind | undefined {
  if (r.outcome === 'content' && typeof r.reason === 'string' && WALL_REASON.test(r.reason)) return 'walled';
  // A site its owner asked us to leave alone is no failure: asked again from a shell without the
  // exclusion (the note at a run's end suggested it), its URLs would have been crawled.
  if (r.outcome === 'refused' && typeof r.reason === 'string' && isExclusionReason(r.reason)) return undefined;
  if (r.outcome === 'error' || r.outcome === 'refused') return 'failed';
  return undefined;
}

/**
 * Writes `file` (replaced whole) with a `{"url","source","asked"}` line per URL of `kinds`;
 * sources: all, or these. `asked` (ignored by the manifest reader) makes each such manifest new:
 * a manifest's id is its bytes, and the same URLs asked again a second time would have been
 * found crawled already by the first.
 */
export async function writeAgainManifest(store: ObjectStore, file: string, kinds: ReadonlySet<AgainKind>, sources: readonly string[] = [], asked = new Date().toISOString()): Promise<AgainSummary> {
  const summary: AgainSummary = { urls: 0, bySource: new Map(), records: 0, sourcesWithoutRecords: [] };
  const exported = await replaceFile(file, (write) => exportRecords(store, (text) => {
    let out = '';
    for (const r of notDoneRecords(text)) {
      const kind = againKind(r);
      if (!kind || !kinds.has(kind) || typeof r.url !== 'string') continue;
      out += `${JSON.stringify({ url: r.url, source: r.source, asked })}\n`;
      summary.urls++;
      const counts = summary.bySource.get(r.source) ?? { walled: 0, failed: 0 };
      counts[kind]++;
      summary.bySource.set(r.source, counts);
    }
    if (out) write(out);
  }, sources, { tmpDir: path.dirname(file) }));
  summary.records = exported.records;
  summary.sourcesWithoutRecords = exported.sourcesWithoutRecords;
  return summary;
}
