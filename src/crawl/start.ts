import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { Client } from '@temporalio/client';
import type { ObjectStore } from '../pipeline/store';
import { forEachLimit } from '../shared/concurrency';
import { chunkSpoolKey, extendsRange } from '../shared/chunkRanges';
import type { ChunkRange, SourceConfig } from '../shared/types';
import { addWorkSignal } from '../workflows/messages';
import { crawlMonitorWorkflow } from '../workflows/monitor';
import { monitorWorkflowId, type MonitorOptions } from '../workflows/monitorState';
import type { Catalog } from './catalog';
import { readManifest } from './manifest';

/**
 * Splits a manifest per source into chunk files in the store and hands each monitor only
 * ranges of chunk numbers (signal-with-start), so URL lists never enter workflow history and a
 * source's share of the monitor's state does not grow with its size.
 * Chunk ids derive from the manifest's content, and a finished chunk leaves a done-marker:
 * starting the same manifest twice crawls nothing twice.
 */

export const CHUNK_SIZE = 500;
/** A monitor hears of new chunks this often while a large manifest is still being split. */
const CHUNKS_PER_SIGNAL = 200;

export interface BadLine {
  line: number;
  error: string;
}

export interface StartSummary {
  manifestId: string;
  sources: Map<string, { urls: number; chunks: number; alreadyDone: number }>;
  badLines: number;
}

export interface StartOptions {
  client: Client;
  store: ObjectStore;
  manifest: string;
  catalog?: Catalog;
  taskQueue: string;
  chunkSize?: number;
  monitorOptions?: Partial<MonitorOptions>;
  onBadLine?: (bad: BadLine) => void;
}

function chunkPrefix(manifestId: string, source: string): string {
  return `work/${manifestId}/${source.replace(/[^A-Za-z0-9._-]+/g, '_')}/chunk-`;
}

export function chunkKeys(manifestId: string, source: string, n: number): { urls: string; done: string } {
  const urls = chunkSpoolKey(chunkPrefix(manifestId, source), n);
  return { urls, done: urls.replace(/\.txt$/, '.done') };
}

async function manifestId(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of fs.createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex').slice(0, 16);
}

/** Sources whose last chunk and monitor start are in flight at once. */
const START_CONCURRENCY = 16;

export async function startCrawl(opts: StartOptions): Promise<StartSummary> {
  if (!fs.existsSync(opts.manifest)) throw new Error(`manifest ${opts.manifest} does not exist`);
  const id = await manifestId(opts.manifest);
  const chunkSize = opts.chunkSize ?? CHUNK_SIZE;
  const buffers = new Map<string, string[]>();
  /** Per source: ranges not yet sent to its monitor, and how many chunks they hold. */
  const refs = new Map<string, { ranges: ChunkRange[]; chunks: number }>();
  const summary: StartSummary = { manifestId: id, sources: new Map(), badLines: 0 };

  const send = async (source: string) => {
    const list = refs.get(source)?.ranges ?? [];
    if (list.length === 0) return;
    refs.delete(source);
    const config: SourceConfig = opts.catalog?.get(source) ?? {};
    await opts.client.workflow.signalWithStart(crawlMonitorWorkflow, {
      workflowId: monitorWorkflowId(source),
      taskQueue: opts.taskQueue,
      args: [{ source, config, options: { taskQueue: opts.taskQueue, ...(opts.monitorOptions ?? {}) } }],
      signal: addWorkSignal,
      signalArgs: [list],
    });
  };

  const flush = async (source: string) => {
    const urls = buffers.get(source) ?? [];
    if (urls.length === 0) return;
    buffers.set(source, []);
    const s = summary.sources.get(source)!;
    const n = s.chunks++;
    const keys = chunkKeys(id, source, n);
    if (await opts.store.get(keys.done)) {
      s.alreadyDone += urls.length;
      return;
    }
    await opts.store.put(keys.urls, urls.join('\n') + '\n', 'text/plain');
    const pending = refs.get(source) ?? { ranges: [], chunks: 0 };
    refs.set(source, pending);
    // A chunk found done above breaks the run: the next range starts after it.
    const part: ChunkRange = { idPrefix: `${id}-`, spoolPrefix: chunkPrefix(id, source), first: n, last: n, chunkSize, lastCount: urls.length };
    const tail = pending.ranges[pending.ranges.length - 1];
    if (tail && extendsRange(tail, part)) pending.ranges[pending.ranges.length - 1] = { ...tail, last: n, lastCount: urls.length };
    else pending.ranges.push(part);
    if (++pending.chunks >= CHUNKS_PER_SIGNAL) await send(source);
  };

  for await (const entry of readManifest(opts.manifest)) {
    if ('error' in entry) {
      summary.badLines++;
      opts.onBadLine?.(entry);
      continue;
    }
    if (!summary.sources.has(entry.source)) summary.sources.set(entry.source, { urls: 0, chunks: 0, alreadyDone: 0 });
    summary.sources.get(entry.source)!.urls++;
    const buf = buffers.get(entry.source) ?? [];
    buf.push(entry.url);
    buffers.set(entry.source, buf);
    if (buf.length >= chunkSize) await flush(entry.source);
  }
  // Many sources start at once: one by one, a few thousand sources would take minutes to start
  // (each is a store write and a signal-with-start), and the first would be crawling long
  // before the last had begun.
  await forEachLimit([...summary.sources.keys()], START_CONCURRENCY, async (source) => {
    await flush(source);
    await send(source);
  });
  return summary;
}
