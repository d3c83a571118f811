import fs from 'node:fs';
import path from 'node:path';
import type { Worker } from '@temporalio/worker';
import { storeFromEnv } from '../pipeline/store';
import { log } from '../shared/log';
import { connectClient, connectWorker, ensureSearchAttributes, TASK_QUEUE } from '../temporal/connect';
import { ensureTemporalServer } from '../temporal/devServer';
import { createCrawlWorker, defaultDeps } from '../workers/worker';
import type { MonitorOptions } from '../workflows/monitorState';
import { readCatalog } from './catalog';
import { startCrawl } from './start';
import { monitoringUpdate, sourceStatus, statusTable, type SourceStatus } from './status';

export interface RunOptions {
  manifest: string;
  catalog?: string;
  outDir: string;
  allowNetworks: string[];
  monitorOptions?: Partial<MonitorOptions>;
  /** Where progress goes; a TTY gets a bar, anything else JSON lines. */
  stream?: NodeJS.WriteStream;
  pollMs?: number;
}

export interface RunResult {
  exitCode: number;
  statuses: SourceStatus[];
  badLines: number;
}

/**
 * The whole crawl on the embedded default: server (unless TEMPORAL_ADDRESS), an in-process
 * worker (unless TEMPORAL_ADDRESS: then workers are the operator's), start every source,
 * show progress, export the metadata as NDJSON and summarise. A source that halts for good
 * does not keep us waiting: it is reported and left for an operator, and the exit code is 1.
 */
export async function runCrawl(opts: RunOptions): Promise<RunResult> {
  const out = opts.stream ?? process.stdout;
  fs.mkdirSync(opts.outDir, { recursive: true });
  const catalog = opts.catalog ? await readCatalog(opts.catalog) : undefined;
  const server = await ensureTemporalServer({ dataDir: path.join(opts.outDir, 'temporal') });
  let worker: Worker | undefined;
  let workerDone: Promise<void> | undefined;
  try {
    const client = await connectClient(server.address);
    await ensureSearchAttributes(client);
    if (!process.env.TEMPORAL_ADDRESS) {
      const connection = await connectWorker(server.address);
      worker = await createCrawlWorker({ connection, deps: defaultDeps({ dataDir: opts.outDir, allowNetworks: opts.allowNetworks }) });
      workerDone = worker.run();
    }
    const store = storeFromEnv(opts.outDir);
    const summary = await startCrawl({
      client, store, manifest: opts.manifest, catalog, taskQueue: TASK_QUEUE, monitorOptions: opts.monitorOptions,
      onBadLine: (b) => process.stderr.write(`crawl: ${opts.manifest} line ${b.line}: ${b.error} (skipped)\n`),
    });
    const sources = [...summary.sources.keys()];
    out.write(`crawling ${sources.length} source(s) from ${opts.manifest}` +
      `${summary.badLines ? ` (${summary.badLines} bad line(s) skipped)` : ''}; Web UI: ${server.uiUrl ?? 'see your Temporal UI'}\n`);
    for (const [name, s] of summary.sources) if (s.alreadyDone) out.write(`  ${name}: ${s.alreadyDone} URL(s) already crawled by an earlier run, skipped\n`);

    let statuses: SourceStatus[] = [];
    let previous: { atMs: number; done: number } | undefined;
    let lastLine = 0;
    for (;;) {
      statuses = await Promise.all(sources.map((s) => sourceStatus(client, s)));
      const update = monitoringUpdate(statuses, previous);
      if (out.isTTY) {
        const g = update.global;
        const pct = g.totalUrls ? Math.floor((g.finishedUrls / g.totalUrls) * 100) : 100;
        const bar = '#'.repeat(Math.floor(pct / 4)).padEnd(25, '.');
        out.write(`\r[${bar}] ${pct}% ${g.finishedUrls}/${g.totalUrls} urls, ${g.done} done, ${g.errors} errors, ${g.ratePerS}/s, ${g.running} running, ${g.halted} halted   `);
      } else if (Date.now() - lastLine >= 5_000) {
        lastLine = Date.now();
        out.write(`${JSON.stringify(update)}\n`);
      }
      previous = { atMs: Date.now(), done: update.global.done };
      const waiting = statuses.filter((s) => s.workflowStatus === 'RUNNING' && s.stats?.state !== 'halted');
      if (waiting.length === 0) break;
      await new Promise((r) => setTimeout(r, opts.pollMs ?? 1_000));
    }
    if (out.isTTY) out.write('\n');
    out.write(`${statusTable(statuses)}\n`);

    const exported = await exportMetadata(opts.outDir);
    if (exported) out.write(`metadata: ${exported.file} (${exported.records} records); thumbnails under ${path.join(opts.outDir, 'store', 'thumbnails')}\n`);
    const halted = statuses.filter((s) => s.stats?.state === 'halted' && s.workflowStatus === 'RUNNING');
    const failed = statuses.filter((s) => !['RUNNING', 'COMPLETED'].includes(s.workflowStatus));
    for (const h of halted) {
      out.write(`HALTED ${h.source}: ${h.stats?.haltReason}. Its URLs are kept; resume with \`crawl resume ${h.source}\` or end it with \`crawl stop ${h.source}\`.\n`);
    }
    for (const f of failed) out.write(`FAILED ${f.source}: monitor ${f.workflowStatus.toLowerCase()}\n`);
    return { exitCode: halted.length || failed.length ? 1 : 0, statuses, badLines: summary.badLines };
  } finally {
    if (worker) {
      worker.shutdown();
      await workerDone?.catch((err) => log.error({ event: 'worker.failed', error: String(err) }, 'worker failed'));
    }
    await server.stop();
  }
}

/** Concatenates the per-unit record files of a local store into one NDJSON file. */
export async function exportMetadata(outDir: string): Promise<{ file: string; records: number } | undefined> {
  const dir = path.join(outDir, 'store', 'records');
  if (!fs.existsSync(dir)) return undefined;
  const file = path.join(outDir, 'metadata.ndjson');
  const files = (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => f.endsWith('.ndjson')).sort();
  let records = 0;
  const fd = fs.openSync(`${file}.tmp`, 'w');
  try {
    for (const f of files) {
      const text = fs.readFileSync(path.join(dir, f), 'utf8');
      records += text.split('\n').filter(Boolean).length;
      fs.writeSync(fd, text);
    }
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(`${file}.tmp`, file);
  return { file, records };
}
