/**
 * npm run bench:monitor — monitors at several rates against a stub URL processor on the local
 * dev server (pinned binary). Prints achieved rate / target in steady state, the largest count
 * in any 1 s window / ceiling, and history events per granted request. Last line: JSON.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { StoreRecorder } from '../src/activities/storeRecorder';
import { LocalStore } from '../src/pipeline/store';
import { ceilings } from '../src/politeness/pacing';
import { ensureSearchAttributes } from '../src/temporal/connect';
import { installTemporalRuntime } from '../src/temporal/runtime';
import { ALL_SEARCH_ATTRIBUTES } from '../src/temporal/searchAttributes';
import { resolveTool } from '../src/temporal/tools';
import { createCrawlWorker } from '../src/workers/worker';
import { crawlMonitorWorkflow } from '../src/workflows/monitor';
import { monitorWorkflowId } from '../src/workflows/monitorState';
import type { WorkChunk } from '../src/shared/types';
import { fmt, historyEvents, max1s, peakRssMb, RecordingStub, steadyRate } from './support';

const RATES = (process.env.BENCH_RATES ?? '2,10,50').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 40);

async function main(): Promise<void> {
  installTemporalRuntime('WARN');
  const cli = resolveTool('temporal');
  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable: cli ? { type: 'existing-path', path: cli } : { type: 'cached-download' }, searchAttributes: ALL_SEARCH_ATTRIBUTES, ip: '127.0.0.1' },
  });
  await ensureSearchAttributes(env.client);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-monitor-'));
  const stub = new RecordingStub();
  const store = new LocalStore(dir);
  const worker = await createCrawlWorker({ connection: env.nativeConnection, taskQueue: 'bench-monitor', deps: { processor: stub, recorder: new StoreRecorder(store), store } });
  const rows: { source: string; rate: number; achieved: number; rateRatio: number; max1s: number; ceiling: number; max1sRatio: number; granted: number; events: number }[] = [];
  await worker.runUntil(async () => {
    const handles = await Promise.all(RATES.map((rate) => {
      const source = `bench-${rate}`;
      const total = Math.ceil(rate * SECONDS);
      const chunks: WorkChunk[] = [];
      for (let i = 0; i < total; i += 500) {
        const urls = Array.from({ length: Math.min(500, total - i) }, (_, k) => `http://${source}.invalid/${i + k}.jpg`);
        chunks.push({ chunkId: `c${i}`, count: urls.length, urls });
      }
      return env.client.workflow.start(crawlMonitorWorkflow, {
        taskQueue: 'bench-monitor', workflowId: monitorWorkflowId(source),
        args: [{ source, config: { rate }, work: chunks, options: { taskQueue: 'bench-monitor' } }],
      });
    }));
    const results = await Promise.all(handles.map((h) => h.result()));
    for (const [i, rate] of RATES.entries()) {
      const source = `bench-${rate}`;
      const times = stub.sends.get(source) ?? [];
      const achieved = steadyRate(times, 5_000);
      const ceiling = ceilings(rate, 0).perSecond;
      const events = await historyEvents(env.client, monitorWorkflowId(source));
      rows.push({
        source, rate, achieved: fmt(achieved, 2), rateRatio: fmt(achieved / rate), max1s: max1s(times), ceiling,
        max1sRatio: fmt(max1s(times) / ceiling), granted: results[i]!.tokens.granted, events,
      });
    }
  });
  await env.teardown();
  for (const r of rows) {
    console.log(`${r.source}: target ${r.rate}/s achieved ${r.achieved}/s (ratio ${r.rateRatio}); max in 1 s ${r.max1s} / ceiling ${r.ceiling} (${r.max1sRatio}); ${r.events} history events for ${r.granted} granted requests (${fmt(r.events / r.granted)} per request)`);
  }
  const summary = {
    bench: 'monitor',
    rates: RATES,
    seconds: SECONDS,
    rateRatio: Math.min(...rows.map((r) => r.rateRatio)),
    max1sRatio: Math.max(...rows.map((r) => r.max1sRatio)),
    eventsPerRequest: fmt(rows.reduce((s, r) => s + r.events, 0) / rows.reduce((s, r) => s + r.granted, 0)),
    peakRssMb: peakRssMb(),
    perSource: rows,
  };
  console.log(JSON.stringify(summary));
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
